import { Type } from '@sinclair/typebox';

// What the inbox API answers (docs/CONTRACT.md "HTTP contract"): the response schemas fastify
// serialises from and /openapi.json shows. A field missing here would be dropped from every answer.

const DateTime = Type.String({ format: 'date-time' });
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

export const NotificationItem = Type.Object({
  id: Type.String({ format: 'uuid' }),
  type: Type.String({
    description: 'the notification type: mention, reply, comment, reaction, follow, security_alert',
  }),
  actorId: Nullable(Type.String()),
  actorName: Nullable(Type.String({ description: "the actor's display name; null when the actor was never seen" })),
  resourceType: Type.String(),
  resourceId: Type.String(),
  excerpt: Nullable(Type.String()),
  createdAt: DateTime,
  readAt: Nullable(DateTime),
  version: Type.Integer({ minimum: 0, description: "inbox version of this notification's last change" }),
  group: Nullable(
    Type.Object(
      {
        key: Type.String({ description: 'stable for the group: replace the item shown for this key' }),
        count: Type.Integer({ minimum: 0, description: 'members (reactions, follows, replies, comments)' }),
        actorCount: Type.Integer({ minimum: 0, description: 'distinct actors among them' }),
        actors: Type.Array(Type.Object({ id: Type.String(), name: Nullable(Type.String()) }), {
          description: 'the latest distinct actors, newest first (at most 3)',
        }),
      },
      { description: 'a grouped item ("Ana, Budi and 3 others reacted to your post"); null when ungrouped' },
    ),
  ),
});

/** The inbox's unread count and version (a read-state change or a list reflects a version). */
const InboxStateFields = {
  count: Type.Integer({ minimum: 0, description: 'unread notifications' }),
  version: Type.Integer({ minimum: 0, description: 'the inbox version: send it back to read-all up to what was seen' }),
};

export const NotificationPage = Type.Object({
  items: Type.Array(NotificationItem),
  nextCursor: Nullable(Type.String({ description: 'opaque; null on the last page' })),
  version: InboxStateFields.version,
});

export const UnreadCount = Type.Object(InboxStateFields);

export const ReadStateChanged = Type.Object({ notification: NotificationItem, ...InboxStateFields });

export const ReadAllResult = Type.Object({
  ...InboxStateFields,
  marked: Type.Integer({ minimum: 0, description: 'notifications this call marked read (0 when repeated)' }),
});

/** The optional body of read / unread / read-all, checked by the route (NS_INVALID_BODY). */
export const SeenVersionBody = Type.Object(
  { version: Type.Optional(Type.Integer({ minimum: 0, description: 'the version the client saw' })) },
  { additionalProperties: false },
);
