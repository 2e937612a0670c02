import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorResponses, textResponse } from '@community/service';
import { PAGE_CSP, PAGE_CSS, PAGE_HTML, PAGE_JS, SERVICE_WORKER_JS } from '../page/page';

/**
 * The push page (docs/PUSH.md "The browser page"), public like the DLQ console's page: GET /push/,
 * /push/page.js, /push/page.css and the service worker /push/sw.js. It holds no data: it asks for a
 * user id and a token and calls the subscriptions API with them.
 */
export function registerPageRoutes(app: FastifyInstance): void {
  const send = (type: string, text: string) => async (_request: FastifyRequest, reply: FastifyReply) =>
    reply
      .header('content-type', type)
      .header('content-security-policy', PAGE_CSP)
      .header('x-content-type-options', 'nosniff')
      .header('x-frame-options', 'DENY')
      .header('cache-control', 'no-store')
      .send(text);
  const page = (mediaType: string, summary: string) => ({
    schema: { tags: ['push'], summary, response: { 200: textResponse(mediaType, summary), ...errorResponses() } },
  });
  app.get(
    '/push/',
    page('text/html', 'The page that subscribes a browser to push'),
    send('text/html; charset=utf-8', PAGE_HTML),
  );
  app.get(
    '/push/page.js',
    page('text/javascript', "The page's script"),
    send('text/javascript; charset=utf-8', PAGE_JS),
  );
  app.get('/push/page.css', page('text/css', "The page's styles"), send('text/css; charset=utf-8', PAGE_CSS));
  app.get(
    '/push/sw.js',
    page('text/javascript', 'The service worker: shows each push'),
    send('text/javascript; charset=utf-8', SERVICE_WORKER_JS),
  );
}
