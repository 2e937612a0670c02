// The part of http_ece 1.2 (no bundled types) the tests use: decrypting an aes128gcm body (RFC 8188)
// as the browser would, with its own ECDH key pair and auth secret (RFC 8291).
declare module 'http_ece' {
  import type { ECDH } from 'node:crypto';
  export function decrypt(
    buffer: Buffer,
    params: { version: 'aes128gcm'; privateKey: ECDH; authSecret: Buffer | string },
  ): Buffer;
}
