import { decodeCursor, encodeCursor } from './cursor';

it('round-trips a cursor and refuses anything else', () => {
  const c = { version: 42, id: '0b0f3c1e-8a55-4c1e-9d43-0b4a2f6c9e11' };
  expect(decodeCursor(encodeCursor(c))).toEqual(c);
  const bad = [
    '',
    'x',
    '[1,2]',
    '["1","0b0f3c1e-8a55-4c1e-9d43-0b4a2f6c9e11"]',
    '[-1,"0b0f3c1e-8a55-4c1e-9d43-0b4a2f6c9e11"]',
    '[1,"not-a-uuid"]',
  ];
  for (const text of bad) expect(decodeCursor(Buffer.from(text).toString('base64url'))).toBeUndefined();
  expect(decodeCursor('%%%')).toBeUndefined();
});
