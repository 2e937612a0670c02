import { keysetCodec } from '@community/service';

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

const codec = keysetCodec<Cursor>({
  parts: (c) => [c.version, c.id],
  key: (version, id) => ({ version, id }),
  validId: (id) => UUID.test(id),
});

export const encodeCursor = codec.encode;
/** undefined when the text is not a cursor this service issued. */
export const decodeCursor = codec.decode;
