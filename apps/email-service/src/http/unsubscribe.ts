import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorResponses, textResponse } from '@community/service';
import * as suppressions from '../store/suppressions';
import { escapeHtml } from '../templates/escape';
import { ERRORS } from './errors';
import { unsubscribeLabel } from '../templates/notification';
import { syncOne, type SyncDeps } from '../unsubscribe/sync';
import type { UnsubscribeClaim, UnsubscribeTokens } from '../unsubscribe/token';

export interface UnsubscribeRouteDeps extends SyncDeps {
  tokens: UnsubscribeTokens;
  now: () => Date;
  /** UNSUBSCRIBE_TOKEN_TTL_DAYS, for the expired-link page. */
  ttlDays: number;
}

/** A browser (the link opened from an email, or the confirmation page's form) asks for HTML. */
const wantsHtml = (request: FastifyRequest) => /\btext\/html\b/.test(request.headers.accept ?? '');

const what = (claim: UnsubscribeClaim) => (claim.scope === 'digest' ? 'digest emails' : unsubscribeLabel(claim.scope));

function page(reply: FastifyReply, title: string, bodyHtml: string): FastifyReply {
  const html = `<!doctype html><html><head><meta charset="utf-8"><meta name="robots" content="noindex"><title>${escapeHtml(title)}</title></head>
<body style="font-family:sans-serif;max-width:600px;margin:2em auto">${bodyHtml}</body></html>`;
  return reply.type('text/html; charset=utf-8').send(html);
}

/**
 * GET  /v1/unsubscribe?token=…  a confirmation page (a GET never changes anything: link scanners
 *                              and previews fetch links in emails);
 * POST /v1/unsubscribe?token=…  performs it: the page's button, or a mail client's RFC 8058
 *                              one-click POST with body `List-Unsubscribe=One-Click`.
 *
 * Performing it records the opt-out locally first (it takes effect for emails already decided),
 * then updates the preferences in notification-service; if that call fails, the scheduler retries
 * it, and the user still gets the confirmation: the opt-out is in force either way.
 */
export function registerUnsubscribeRoutes(app: FastifyInstance, deps: UnsubscribeRouteDeps): void {
  // RFC 8058 allows both encodings; the token is in the URL, so the body's content is not needed.
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 8192 },
    (_req, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(String(body))));
    },
  );
  app.addContentTypeParser('multipart/form-data', { parseAs: 'string', bodyLimit: 65536 }, (_req, _body, done) =>
    done(null, {}),
  );

  const querySchema = {
    type: 'object',
    required: ['token'],
    properties: {
      token: { type: 'string', minLength: 1, maxLength: 2048, description: 'the signed token of the email link' },
    },
  } as const;

  /**
   * The pages are HTML (fastify sends them as they are); the errors are the coded JSON body, and an
   * expired link asked for by a browser (Accept: text/html) gets a page saying so instead.
   */
  const errors = errorResponses(400);
  const expired = {
    description: 'The link has expired: a page for a browser (Accept: text/html), the coded error otherwise',
    content: {
      'text/html': { schema: Type.String() },
      'application/json': { schema: errors['400'] },
    },
  };
  const TAGS = ['unsubscribe'];

  /**
   * The token's claim, or an answer: a forged token is a 400; an expired one a 410 that says so, as
   * a page for a person (a browser asks for HTML) and as the coded error body for a mail client's
   * one-click POST or any other caller. Undefined when the page was sent.
   */
  const verify = (token: string, request: FastifyRequest, reply: FastifyReply): UnsubscribeClaim | undefined => {
    const verified = deps.tokens.verify(token);
    if (verified.ok) return verified.claim;
    if (verified.reason === 'invalid') throw ERRORS.INVALID_UNSUBSCRIBE_TOKEN();
    if (!wantsHtml(request)) throw ERRORS.EXPIRED_UNSUBSCRIBE_TOKEN();
    page(
      reply.code(410),
      'Link expired',
      `<h1>This unsubscribe link has expired</h1>
<p>Unsubscribe links work for ${deps.ttlDays} days after their email was sent. Nothing was changed.</p>
<p>To stop these emails, turn them off in your notification settings, or use the unsubscribe link in a more recent email.</p>`,
    );
    return undefined;
  };

  app.get<{ Querystring: { token: string } }>(
    '/v1/unsubscribe',
    {
      schema: {
        tags: TAGS,
        summary: 'The confirmation page of an unsubscribe link (changes nothing: link scanners fetch links)',
        querystring: querySchema,
        response: {
          200: textResponse('text/html', 'A page asking to confirm, with a form that POSTs the same link'),
          410: expired,
          ...errors,
        },
      },
    },
    async (request, reply) => {
      const claim = verify(request.query.token, request, reply);
      if (!claim) return reply;
      const action = `/v1/unsubscribe?token=${encodeURIComponent(request.query.token)}`;
      return page(
        reply,
        'Unsubscribe',
        `<h1>Unsubscribe</h1>
<p>Stop receiving <strong>${escapeHtml(what(claim))}</strong>? You can turn them back on in your notification settings.</p>
<form method="post" action="${escapeHtml(action)}"><input type="hidden" name="List-Unsubscribe" value="One-Click">
<button type="submit">Unsubscribe</button></form>`,
      );
    },
  );

  app.post<{ Querystring: { token: string } }>(
    '/v1/unsubscribe',
    {
      // The body is not read (the token is in the URL): documented, never validated.
      config: {
        documentedBody: {
          schema: Type.Object({ 'List-Unsubscribe': Type.Optional(Type.Literal('One-Click')) }),
          required: false,
          mediaType: 'application/x-www-form-urlencoded',
          description:
            "RFC 8058 one-click: `List-Unsubscribe=One-Click` (multipart too), or the confirmation page's form",
        },
      },
      schema: {
        tags: TAGS,
        summary: "Unsubscribes: the page's button, or a mail client's RFC 8058 one-click POST",
        querystring: querySchema,
        response: {
          200: textResponse(
            'text/html',
            'A page confirming the opt-out (in force even if the preference sync retries)',
          ),
          410: expired,
          ...errors,
        },
      },
    },
    async (request, reply) => {
      const claim = verify(request.query.token, request, reply);
      if (!claim) return reply;
      await suppressions.add(deps.pool, claim.userId, claim.scope);
      const synced = await syncOne(deps, claim.userId, claim.scope, 1, deps.now());
      request.log.info({ userId: claim.userId, scope: claim.scope, synced }, 'unsubscribed');
      return page(
        reply,
        'Unsubscribed',
        `<h1>Unsubscribed</h1><p>You will no longer receive <strong>${escapeHtml(what(claim))}</strong>.</p>`,
      );
    },
  );
}
