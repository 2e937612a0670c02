/**
 * Just enough MIME to read what nodemailer sends (headers, multipart/alternative, quoted-printable
 * and base64 parts), so tests assert on the email as a mail client would see it. The raw message
 * is kept too, for assertions about what went over the wire.
 */
export interface ParsedMail {
  raw: string;
  /** Raw header block, unfolded: one header per line. */
  headerLines: string[];
  headers: Map<string, string>;
  messageId: string;
  subject: string;
  to: string;
  text: string;
  html: string;
}

function unfold(block: string): string[] {
  return block
    .replace(/\r\n[ \t]+/g, ' ')
    .split('\r\n')
    .filter(Boolean);
}

function headerMap(lines: string[]): Map<string, string> {
  const map = new Map<string, string>();
  for (const line of lines) {
    const i = line.indexOf(':');
    if (i > 0) map.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim());
  }
  return map;
}

/** RFC 2047 encoded words (=?utf-8?Q?...?= / =?utf-8?B?...?=). */
export function decodeWords(value: string): string {
  return value
    .replace(/\?=\s+=\?/g, '?==?')
    .replace(/=\?([^?]+)\?([QqBb])\?([^?]*)\?=/g, (_m, _charset: string, enc: string, data: string) =>
      enc.toUpperCase() === 'B'
        ? Buffer.from(data, 'base64').toString('utf8')
        : Buffer.from(decodeQpBytes(data.replace(/_/g, ' '))).toString('utf8'),
    );
}

function decodeQpBytes(input: string): number[] {
  const bytes: number[] = [];
  const s = input.replace(/=\r?\n/g, '');
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '=' && /^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) {
      bytes.push(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(s[i], 'utf8'));
    }
  }
  return bytes;
}

function decodeBody(body: string, encoding: string | undefined): string {
  switch ((encoding ?? '').toLowerCase()) {
    case 'quoted-printable':
      return Buffer.from(decodeQpBytes(body)).toString('utf8');
    case 'base64':
      return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
    default:
      return body;
  }
}

function split(raw: string): { headerLines: string[]; body: string } {
  const at = raw.indexOf('\r\n\r\n');
  return at < 0
    ? { headerLines: unfold(raw), body: '' }
    : { headerLines: unfold(raw.slice(0, at)), body: raw.slice(at + 4) };
}

export function parseMail(raw: string): ParsedMail {
  const { headerLines, body } = split(raw);
  const headers = headerMap(headerLines);
  let text = '';
  let html = '';
  const collect = (type: string, encoding: string | undefined, content: string) => {
    if (type.startsWith('text/plain')) text = decodeBody(content, encoding);
    else if (type.startsWith('text/html')) html = decodeBody(content, encoding);
  };
  const contentType = headers.get('content-type') ?? 'text/plain';
  const boundary = /boundary="?([^";]+)"?/i.exec(contentType)?.[1];
  if (boundary) {
    for (const part of body.split(`--${boundary}`).slice(1)) {
      if (part.startsWith('--')) break;
      const p = split(part.replace(/^\r\n/, ''));
      const ph = headerMap(p.headerLines);
      collect(ph.get('content-type') ?? 'text/plain', ph.get('content-transfer-encoding'), p.body.replace(/\r\n$/, ''));
    }
  } else {
    collect(contentType, headers.get('content-transfer-encoding'), body);
  }
  return {
    raw,
    headerLines,
    headers,
    messageId: headers.get('message-id') ?? '',
    subject: decodeWords(headers.get('subject') ?? ''),
    to: decodeWords(headers.get('to') ?? ''),
    text: text.replace(/\r\n/g, '\n'),
    html: html.replace(/\r\n/g, '\n'),
  };
}
