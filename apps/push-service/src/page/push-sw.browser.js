// The service worker of the push page (GET /push/sw.js, scope /push/): shows each push push-service
// sends (the decrypted JSON payload: title, body, url, tag, notificationId, type), tells the open
// pages what it showed, and opens the notification's link when it is clicked.
'use strict';

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

self.addEventListener('push', (event) => {
  let data;
  try {
    data = event.data ? event.data.json() : {};
  } catch {
    data = { title: 'Community', body: event.data ? event.data.text() : '' };
  }
  const title = typeof data.title === 'string' && data.title ? data.title : 'Community';
  const body = typeof data.body === 'string' ? data.body : '';
  event.waitUntil(
    (async () => {
      await self.registration.showNotification(title, {
        body,
        tag: typeof data.tag === 'string' ? data.tag : undefined,
        data: { url: typeof data.url === 'string' ? data.url : undefined, notificationId: data.notificationId },
      });
      const pages = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
      for (const page of pages) page.postMessage({ kind: 'shown', title, body, type: data.type });
    })(),
  );
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const url = event.notification.data?.url;
  if (url) event.waitUntil(self.clients.openWindow(url));
});
