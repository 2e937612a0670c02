import { renderDlqMessage } from './ops';
import { terminalBlock, terminalText } from './terminal';

/** What a terminal would interpret: ESC, CSI (8-bit), CR, BS, BEL, the other C0/C1 controls, bidi overrides. */
// eslint-disable-next-line no-control-regex
const INTERPRETED = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('terminalText / terminalBlock', () => {
  it('escapes ANSI sequences, C0 and C1 controls and bidi overrides, visibly', () => {
    expect(terminalText('\u001b[2J\u001b]0;pwned\u0007ok')).toBe('\\x1b[2J\\x1b]0;pwned\\x07ok');
    expect(terminalText('a\rb\bc\u009b31m\u202egnp.exe')).toBe('a\\rb\\bc\\x9b31m\\u202egnp.exe');
    expect(terminalText('line 1\nline 2')).toBe('line 1\\nline 2'); // one value stays on one line
    expect(terminalText('plain text, ünïcødé, emoji 🙂')).toBe('plain text, ünïcødé, emoji 🙂');
  });

  it('a block keeps its own newlines and stays valid JSON', () => {
    const json = JSON.stringify({ note: 'x\u009b2J\u202ey', esc: '\u001b[31m' }, null, 2);
    const safe = terminalBlock(json);
    expect(safe).not.toMatch(INTERPRETED);
    expect(safe.split('\n')).toHaveLength(json.split('\n').length);
    expect(JSON.parse(safe)).toEqual(JSON.parse(json));
  });
});

describe('ops dlq show (renderDlqMessage)', () => {
  // A dead letter as GET /v1/admin/dlq/messages/:id answers it, every publisher-written field hostile.
  const hostile = '\u001b]0;owned\u0007\u001b[2J\u001b[1;1Hall good\r\u009b2K\u202e';
  const message = {
    id: '7',
    messageId: `m-${hostile}`,
    messageType: `user.mentioned${hostile}`,
    state: 'pending',
    replayCount: 0,
    originalQueue: 'notification-service.critical',
    queue: 'notification-service.critical.dlq',
    handler: `h${hostile}`,
    attempts: 1,
    deadLetteredAt: '2026-12-01T10:00:00.000Z',
    errorClass: `ContractError${hostile}`,
    errorKind: 'permanent',
    errorMessage: `bad\nerror: fake line${hostile}`,
    bodyJson: { data: { excerpt: hostile } },
    body: hostile,
    headers: { 'x-error-message': hostile },
    history: [
      {
        operationId: '1',
        action: 'replay',
        requestedBy: `ops:${hostile}`,
        result: 'replayed',
        detail: hostile,
        at: '2026-12-01T10:01:00.000Z',
      },
    ],
  };

  it('prints no control character a terminal would act on, in any field', () => {
    const out = renderDlqMessage(message);
    expect(out).not.toMatch(INTERPRETED);
    expect(out).toContain('\\x1b]0;owned\\x07\\x1b[2J');
    // A message cannot forge a line of the CLI's own output.
    expect(out.split('\n').filter((l) => l.startsWith('error:'))).toHaveLength(1);
    expect(out).toContain('error: ContractError\\x1b]0;owned');
  });

  it('a body that is not JSON is escaped the same way', () => {
    const out = renderDlqMessage({ ...message, bodyJson: null });
    expect(out).not.toMatch(INTERPRETED);
    expect(out).toContain('payload:\n\\x1b]0;owned\\x07');
  });
});
