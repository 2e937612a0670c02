/**
 * Bearer-token authentication shared by every HTTP API (docs/CONTRACT.md "HTTP contract"). Three
 * principals, three kinds of token, none of which can be made from another's key:
 * - users: HS256 with JWT_SECRET (the community site issues them), `iss`/`aud` pinned, `exp`
 *   required and bounded; `sub` is the user id. An `admin` scope in such a token grants nothing.
 * - operators: EdDSA signed with the operator's own Ed25519 key, selected by the header `kid`;
 *   services hold only the public keys (ADMIN_KEYS), and the operator's identity is the one the
 *   services bind to that kid, never a claim of the token.
 * - services: EdDSA with the calling service's own key (`serviceTokens`), no `kid`.
 * Each service keeps its own error-code prefix (`NS_INVALID_TOKEN`, `FS_INVALID_TOKEN`, …).
 */
export {
  ADMIN_TOKEN_ISSUER,
  authSettingsFrom,
  registerAuth,
  tokenAuthenticator,
  TokenRefused,
  type AuthConfig,
  type AuthSettings,
  type Principal,
  type TokenAuthenticator,
} from './tokens';
export {
  adminTokenSigner,
  generateOperatorKey,
  serviceTokenSigner,
  userTokenSigner,
  type AdminTokenSignerOptions,
  type ServiceTokenSignerOptions,
  type UserTokenSignerOptions,
} from './signers';
export { authGuards, type AuthGuardOptions, type ServiceTokenOptions } from './guards';
export { SECURITY, SECURITY_SCHEMES, securityOf, type SecurityRequirement } from './security';
