/**
 * Keyset cursor over (created_version, id), newest first. Opaque to clients (base64url of JSON).
 *
 * Stable while notifications arrive: a page starts strictly after the last row of the previous one,
 * and a user's created_version grows in commit order (inserts hold the user's counter row lock),
 * so a new notification always sorts above every row already committed: it can neither shift a
 * page (as OFFSET would) nor land behind the cursor (as a late-committed timestamp could).
 */
export interface Cursor {
  version: number;
  id: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify([c.version, c.id])).toString('base64url');
}

/** undefined when the text is not a cursor this service issued. */
export function decodeCursor(text: string): Cursor | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (!Array.isArray(value) || value.length !== 2) return undefined;
    const [version, id] = value as unknown[];
    if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 0) return undefined;
    if (typeof id !== 'string' || !UUID.test(id)) return undefined;
    return { version, id };
  } catch {
    return undefined;
  }
}
