// Idempotency keys of notifications (the contract's `kind:part:part` formats), and the one rule for
// building any composite key from opaque ids, so slot keys and digest keys cannot collide either.

/**
 * `kind:part:part…`. Ids are opaque strings and could themselves contain ':', which would make
 * `mention:a:b:c` ambiguous (two different notifications, one key: one silently dropped). So ':'
 * and '%' inside a part are percent-encoded; ids without them, i.e. every uuid or integer id,
 * appear verbatim, which is exactly the contract's format.
 *
 * `parts` is named so an empty id fails naming the field (`commentId must be a non-empty string`);
 * the key keeps the parts in the order they are written.
 */
export function compositeKey(kind: string, parts: Readonly<Record<string, string>>): string {
  let key = kind;
  for (const [name, value] of Object.entries(parts)) key += `:${keyPart(name, value)}`;
  return key;
}

function keyPart(name: string, value: string): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new TypeError(`idempotency key part ${name} must be a non-empty string`);
  }
  if (value.indexOf(':') === -1 && value.indexOf('%') === -1) return value;
  return value.replace(/%/g, '%25').replace(/:/g, '%3A');
}

/** `mention:{commentId}:{mentionedUserId}` */
export function mentionKey(commentId: string, mentionedUserId: string): string {
  return compositeKey('mention', { commentId, mentionedUserId });
}

/** `reply:{commentId}:{parentAuthorId}` */
export function replyKey(commentId: string, parentAuthorId: string): string {
  return compositeKey('reply', { commentId, parentAuthorId });
}

/** `comment:{commentId}:{postAuthorId}` (a comment on the recipient's post) */
export function commentOnPostKey(commentId: string, postAuthorId: string): string {
  return compositeKey('comment', { commentId, postAuthorId });
}

/** `follow:{followerId}:{followeeId}` */
export function followKey(followerId: string, followeeId: string): string {
  return compositeKey('follow', { followerId, followeeId });
}

/** `reaction:{reactionId}` */
export function reactionKey(reactionId: string): string {
  return compositeKey('reaction', { reactionId });
}

/** `security:{alertId}` */
export function securityAlertKey(alertId: string): string {
  return compositeKey('security', { alertId });
}
