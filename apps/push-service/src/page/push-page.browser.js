// The push page (GET /push/): registers the service worker (/push/sw.js, scope /push/), subscribes
// this browser with the VAPID public key of GET /v1/push/vapid-public-key, and posts the
// subscription to POST /v1/users/:userId/push-subscriptions with the token the user gives (kept in
// sessionStorage, gone with the tab). Everything from outside is written with textContent.
'use strict';

const $ = (id) => document.getElementById(id);
const status = (text) => {
  $('status').textContent = text;
};

function keyBytes(base64url) {
  const b64 = base64url
    .replace(/-/g, '+')
    .replace(/_/g, '/')
    .padEnd(Math.ceil(base64url.length / 4) * 4, '=');
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
}

async function api(method, path, token, body) {
  const res = await fetch(path, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status === 204) return { status: 204 };
  const json = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(`${res.status} ${json.code ?? ''}: ${json.message ?? res.statusText}`);
  return { status: res.status, body: json };
}

async function main() {
  if (!('serviceWorker' in navigator) || !('PushManager' in window)) {
    status('This browser has no Web Push (service workers and PushManager are needed).');
    return;
  }
  $('user-id').value = sessionStorage.getItem('push.userId') ?? '';
  $('token').value = sessionStorage.getItem('push.token') ?? '';
  const registration = await navigator.serviceWorker.register('/push/sw.js', { scope: '/push/' });
  await navigator.serviceWorker.ready;
  // The worker tells the page what it showed (the headless test reads this list too).
  navigator.serviceWorker.addEventListener('message', (event) => {
    if (event.data?.kind !== 'shown') return;
    const li = document.createElement('li');
    li.textContent = `${event.data.title}: ${event.data.body}`;
    $('shown').append(li);
  });
  const { publicKey } = await (await fetch('/v1/push/vapid-public-key')).json();
  const existing = await registration.pushManager.getSubscription();
  status(existing ? 'This browser is subscribed.' : 'Ready: give your user id and token, then subscribe.');
  document.body.dataset.ready = 'true';

  $('subscribe-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const userId = $('user-id').value.trim();
    const token = $('token').value.trim();
    sessionStorage.setItem('push.userId', userId);
    sessionStorage.setItem('push.token', token);
    try {
      if ((await Notification.requestPermission()) !== 'granted') {
        status('Notifications are blocked for this site: allow them in the browser, then subscribe again.');
        return;
      }
      const subscription =
        (await registration.pushManager.getSubscription()) ??
        (await registration.pushManager.subscribe({
          userVisibleOnly: true,
          applicationServerKey: keyBytes(publicKey),
        }));
      const answer = await api(
        'POST',
        `/v1/users/${encodeURIComponent(userId)}/push-subscriptions`,
        token,
        subscription.toJSON(),
      );
      status(answer.status === 201 ? 'Subscribed.' : 'Subscribed already (keys refreshed).');
    } catch (err) {
      status(`Not subscribed: ${err.message}`);
    }
  });

  $('unsubscribe').addEventListener('click', async () => {
    const subscription = await registration.pushManager.getSubscription();
    if (!subscription) {
      status('This browser is not subscribed.');
      return;
    }
    try {
      await api(
        'DELETE',
        `/v1/users/${encodeURIComponent($('user-id').value.trim())}/push-subscriptions`,
        $('token').value.trim(),
        { endpoint: subscription.endpoint },
      );
      await subscription.unsubscribe();
      status('Unsubscribed.');
    } catch (err) {
      status(`Not unsubscribed: ${err.message}`);
    }
  });
}

main().catch((err) => status(`Failed: ${err.message}`));
