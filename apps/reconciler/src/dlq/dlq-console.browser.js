(() => {
  const $ = (id) => document.getElementById(id);
  const KEY = 'dlq-console-token';
  let filter = {};
  let nextCursor = null;
  let asOf = null;
  let pending = null; // { action, selection }
  let operator = null; // who the reconciler verified the token as (signedInAs)
  let renewed = null; // { promise, resolve } while the page waits for a new token

  function token() {
    return sessionStorage.getItem(KEY);
  }

  // The token's exp, for the countdown only: the reconciler verifies every request, the page trusts nothing it decodes.
  function expiresAt(t) {
    try {
      const c = JSON.parse(atob(t.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')));
      return typeof c.exp === 'number' ? c.exp * 1000 : null;
    } catch (e) {
      return null;
    }
  }

  function send(t, method, path, body) {
    return fetch(path, {
      method,
      headers: Object.assign(
        { authorization: 'Bearer ' + t },
        body === undefined ? {} : { 'content-type': 'application/json' },
      ),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  }

  async function api(method, path, body) {
    for (;;) {
      const res = await send(token(), method, path, body);
      const data = await res.json().catch(() => ({}));
      // Signed in and the token is refused (it expired): wait for a new one, then send this again.
      if (res.status === 401 && operator) {
        await renewal('The reconciler refused the token: ' + (data.message || 'HTTP 401') + '.');
        continue;
      }
      if (res.status === 401 || res.status === 403) {
        showLogin(data.message || 'token refused');
        throw new Error(data.message);
      }
      if (!res.ok) throw new Error(data.message || 'HTTP ' + res.status);
      return data;
    }
  }

  function renewal(reason) {
    $('renewal').hidden = false;
    $('renewal-reason').textContent = reason;
    $('renew-error').textContent = '';
    if (!renewed) {
      let resolve, reject;
      const promise = new Promise((ok, fail) => {
        resolve = ok;
        reject = fail;
      });
      renewed = { promise, resolve, reject };
    }
    return renewed.promise;
  }

  // A renewal keeps the operator: the new token must verify (the reconciler says who it is) as the same one.
  async function renew(t) {
    const res = await send(t, 'GET', '/v1/admin/dlq');
    const data = await res.json().catch(() => ({}));
    if (!res.ok) {
      $('renew-error').textContent = 'Not renewed: ' + (data.message || 'HTTP ' + res.status);
      return;
    }
    if (data.signedInAs !== operator) {
      $('renew-error').textContent =
        'Not renewed: this token is for ' +
        data.signedInAs +
        ', and the console is signed in as ' +
        operator +
        '. A renewal keeps the operator; to sign in as someone else, use Forget token.';
      return;
    }
    sessionStorage.setItem(KEY, t);
    $('renewal').hidden = true;
    $('renew-token').value = '';
    $('renew-error').textContent = '';
    showExpiry();
    const waiting = renewed;
    renewed = null;
    if (waiting) waiting.resolve();
  }

  function showExpiry() {
    const at = token() ? expiresAt(token()) : null;
    $('expiry').textContent = at ? 'token valid until ' + new Date(at).toLocaleTimeString() : '';
    $('expiry').dataset.expiresAt = at ? String(at) : '';
    const left = at ? at - Date.now() : null;
    // Two minutes ahead, so a long preview or replay is not cut off mid-way.
    if (operator && left !== null && left < 120000 && $('renewal').hidden) {
      renewal(left > 0 ? 'The token expires in ' + Math.ceil(left / 1000) + ' s.' : 'The token has expired.');
    }
  }

  function cell(tr, text, cls) {
    const td = document.createElement('td');
    td.textContent = text == null ? '' : String(text);
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }
  function when(iso) {
    return iso ? new Date(iso).toLocaleString() : '—';
  }
  function age(s) {
    if (s == null) return '—';
    if (s < 120) return s + ' s';
    if (s < 7200) return Math.round(s / 60) + ' min';
    if (s < 172800) return Math.round(s / 3600) + ' h';
    return Math.round(s / 86400) + ' d';
  }
  function query(f, extra) {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(Object.assign({}, f, extra || {}))) if (v) p.set(k, v);
    return p.toString();
  }

  function showLogin(message) {
    // Requests waiting for a renewal die with the sign-out: never sent later with another operator's token.
    if (renewed) {
      renewed.reject(new Error('signed out before the token was renewed'));
      renewed = null;
    }
    operator = null;
    $('renewal').hidden = true;
    $('renew').hidden = true;
    $('expiry').textContent = '';
    $('login').hidden = false;
    $('app').hidden = true;
    $('logout').hidden = true;
    $('who').textContent = '';
    $('login-error').textContent = message || '';
  }

  async function loadSummary() {
    const s = await api('GET', '/v1/admin/dlq');
    $('who').textContent = s.signedInAs ? 'signed in as ' + s.signedInAs : '';
    if (!operator) {
      operator = s.signedInAs;
      $('renew').hidden = false;
      showExpiry();
    }
    const tbody = $('summary').tBodies[0];
    tbody.replaceChildren();
    const select = document.querySelector('#filters select[name=queue]');
    const current = select.value;
    select.replaceChildren(new Option('all', ''));
    for (const q of s.queues) {
      const tr = document.createElement('tr');
      tr.className = 'clickable';
      tr.dataset.queue = q.queue;
      cell(tr, q.queue);
      cell(tr, q.pending, q.pending > 0 ? 'err' : 'ok');
      cell(tr, age(q.oldestAgeSeconds));
      cell(tr, when(q.lastDeadLetteredAt));
      cell(tr, q.groups);
      cell(tr, q.inBroker == null ? '?' : q.inBroker);
      tr.onclick = () => {
        filter = { queue: q.queue };
        syncForm();
        loadList();
      };
      tbody.appendChild(tr);
      select.appendChild(new Option(q.queue, q.queue));
    }
    select.value = current;
  }

  async function loadGroups() {
    const { groups } = await api('GET', '/v1/admin/dlq/groups?' + query({ state: filter.state, queue: filter.queue }));
    const tbody = $('groups').tBodies[0];
    tbody.replaceChildren();
    if (groups.length === 0) {
      const tr = document.createElement('tr');
      cell(tr, 'No dead letters here.', 'muted').colSpan = 7;
      tbody.appendChild(tr);
    }
    for (const g of groups) {
      const tr = document.createElement('tr');
      tr.className = 'clickable';
      tr.dataset.group = g.fingerprint;
      cell(tr, g.count);
      cell(tr, g.errorClass + ': ' + g.normalized, 'err');
      cell(tr, g.handler);
      cell(tr, g.messageType);
      cell(tr, when(g.firstSeen));
      cell(tr, when(g.lastSeen));
      cell(tr, g.queues.join(', '));
      tr.title = 'e.g. ' + g.sampleMessage;
      tr.onclick = () => {
        filter = Object.assign({}, filter, { group: g.fingerprint });
        syncForm();
        loadList();
      };
      tbody.appendChild(tr);
    }
  }

  async function loadList(append) {
    const page = await api(
      'GET',
      '/v1/admin/dlq/messages?' + query(filter, { cursor: append ? nextCursor : '', limit: '50' }),
    );
    const tbody = $('messages').tBodies[0];
    if (!append) tbody.replaceChildren();
    if (!append) asOf = page.asOf;
    nextCursor = page.nextCursor;
    $('more').hidden = !nextCursor;
    $('total').textContent = page.total + ' message(s) match the filter';
    $('total').dataset.total = String(page.total);
    for (const m of page.items) {
      const tr = document.createElement('tr');
      tr.className = 'clickable';
      tr.dataset.id = m.id;
      cell(tr, m.id);
      cell(tr, when(m.deadLetteredAt));
      cell(tr, m.originalQueue);
      cell(tr, m.messageType);
      cell(tr, m.errorClass + ': ' + m.errorMessage, 'err');
      cell(tr, m.attempts);
      cell(tr, m.state);
      tr.onclick = () => showDetail(m.id);
      tbody.appendChild(tr);
    }
  }

  async function showDetail(id) {
    const m = await api('GET', '/v1/admin/dlq/messages/' + encodeURIComponent(id));
    $('detail').hidden = false;
    $('detail-id').textContent = '#' + m.id + ' (' + m.messageId + ')';
    $('detail-meta').textContent =
      'original queue ' +
      m.originalQueue +
      ' · DLQ ' +
      m.queue +
      ' · ' +
      m.attempts +
      ' attempt(s) · handler ' +
      (m.handler || '—') +
      ' · dead-lettered ' +
      when(m.deadLetteredAt) +
      ' · state ' +
      m.state +
      ' · replayed ' +
      m.replayCount +
      ' time(s)';
    $('detail-body').textContent = m.bodyJson ? JSON.stringify(m.bodyJson, null, 2) : m.body;
    $('detail-error').textContent = m.errorClass + ' (' + m.errorKind + ')\n' + m.errorMessage;
    $('detail-headers').textContent = JSON.stringify(m.headers, null, 2);
    $('detail-history').textContent = m.history.length
      ? m.history
          .map(
            (h) =>
              '#' +
              h.operationId +
              ' ' +
              h.action +
              ' by ' +
              h.requestedBy +
              ': ' +
              h.result +
              (h.detail ? ' (' + h.detail + ')' : '') +
              ' ' +
              when(h.at),
          )
          .join('\n')
      : 'none';
    $('detail-replay').onclick = () => dryRun('replay', { ids: [m.id] });
    $('detail-discard').onclick = () => dryRun('discard', { ids: [m.id] });
    $('detail-restore').hidden = m.state !== 'discarded';
    $('detail-restore').onclick = () => dryRun('restore', { ids: [m.id] });
    if (m.discardedAt)
      $('detail-meta').textContent +=
        ' · discarded by ' +
        m.discardedBy +
        ' ' +
        when(m.discardedAt) +
        ', restorable until ' +
        when(m.restorableUntil);
    $('detail').scrollIntoView();
  }

  function syncForm() {
    const f = $('filters');
    for (const name of ['queue', 'group', 'q']) f.elements[name].value = filter[name] || '';
    f.elements.state.value = filter.state || 'pending';
    loadGroups().catch(report);
  }

  function report(err) {
    $('total').textContent = 'Error: ' + err.message;
  }

  async function dryRun(action, selection) {
    const rate = Number($('rate').value) || 50;
    const body = Object.assign({ dryRun: true }, selection, action === 'replay' ? { ratePerSecond: rate } : {});
    const p = await api('POST', '/v1/admin/dlq/' + action, body);
    // The real action is sent with the same selection, pinned to what this preview saw.
    const pinned = selection.filter
      ? { filter: Object.assign({}, selection.filter, { asOf: p.asOf || '0' }) }
      : selection;
    // Beyond the bound of one discard, confirming sends the count shown back: the server refuses
    // if the selection no longer holds exactly that many.
    const bulk = action === 'discard' && p.needsAll ? { all: true, expectedCount: p.matched } : {};
    pending = { action, selection: Object.assign({}, pinned, bulk), rate };
    $('preview').hidden = false;
    $('preview-text').textContent =
      'Dry run: ' +
      action +
      ' would act on ' +
      p.matched +
      ' message(s)' +
      (action === 'replay' ? ', to their original queues, at ' + rate + '/s' : '') +
      (p.needsAll ? ' (more than ' + p.maxPerCall + ': confirming discards all of them)' : '') +
      '. Nothing has changed yet.';
    $('preview-text').dataset.matched = String(p.matched);
    // Causes a replay does not remove (a body that is not JSON fails again): said before Confirm.
    const warnings = $('preview-warnings');
    warnings.replaceChildren();
    for (const w of p.warnings || []) {
      const li = document.createElement('li');
      li.dataset.permanence = w.permanence;
      li.textContent = (w.permanence === 'fails-again' ? 'Will fail again: ' : 'Likely to fail again: ') + w.message;
      warnings.appendChild(li);
    }
    const ul = $('preview-queues');
    ul.replaceChildren();
    for (const q of p.byQueue) {
      const li = document.createElement('li');
      li.textContent = q.count + ' → ' + q.originalQueue;
      ul.appendChild(li);
    }
    $('confirm').disabled = p.matched === 0;
    $('confirm').textContent = 'Confirm ' + action + ' of ' + p.matched;
  }

  async function confirm() {
    if (!pending) return;
    const { action, selection, rate } = pending;
    pending = null;
    $('confirm').disabled = true;
    const body = Object.assign({ dryRun: false }, selection, action === 'replay' ? { ratePerSecond: rate } : {});
    // The preview stays on screen until the action is accepted (a renewal may come in between).
    const r = await api('POST', '/v1/admin/dlq/' + action, body);
    $('preview').hidden = true;
    $('progress').hidden = false;
    $('progress-text').dataset.state = 'starting';
    $('progress-text').dataset.operation = r.operationId;
    $('progress-text').textContent = 'Operation #' + r.operationId + ' (' + action + '): starting — 0/' + r.matched;
    $('progress-bar').value = 0;
    await poll(r.operationId);
  }

  async function poll(id) {
    for (;;) {
      const op = await api('GET', '/v1/admin/dlq/operations/' + id);
      const done = op.succeeded + op.failed + op.skipped;
      $('progress-bar').max = Math.max(1, op.matched);
      $('progress-bar').value = done;
      $('progress-text').textContent =
        'Operation #' +
        op.id +
        ' (' +
        op.action +
        '): ' +
        op.state +
        ' — ' +
        done +
        '/' +
        op.matched +
        ' (' +
        op.succeeded +
        ' ok, ' +
        op.failed +
        ' failed, ' +
        op.skipped +
        ' skipped)' +
        (op.error ? ' — ' + op.error : '');
      $('progress-text').dataset.state = op.state;
      if (op.state !== 'running') break;
      await new Promise((r) => setTimeout(r, 500));
    }
    await refreshAll();
  }

  async function refreshAll() {
    await Promise.all([loadSummary(), loadGroups(), loadList()]);
  }

  async function enter() {
    $('login').hidden = true;
    $('app').hidden = false;
    $('logout').hidden = false;
    $('who').textContent = '';
    await refreshAll();
  }

  $('login-form').onsubmit = (e) => {
    e.preventDefault();
    sessionStorage.setItem(KEY, $('token').value.trim());
    enter().catch(report);
  };
  $('logout').onclick = () => {
    sessionStorage.removeItem(KEY);
    showLogin();
  };
  $('renew').onclick = () => {
    renewal('Renewing the token ahead of time.');
    $('renew-token').focus();
  };
  $('renew-form').onsubmit = (e) => {
    e.preventDefault();
    renew($('renew-token').value.trim()).catch((err) => {
      $('renew-error').textContent = 'Not renewed: ' + err.message;
    });
  };
  setInterval(showExpiry, 5000);
  $('refresh').onclick = () => refreshAll().catch(report);
  $('filters').onsubmit = (e) => {
    e.preventDefault();
    const f = e.target.elements;
    filter = { queue: f.queue.value, group: f.group.value.trim(), q: f.q.value.trim(), state: f.state.value };
    loadGroups().catch(report);
    loadList().catch(report);
  };
  $('clear').onclick = () => {
    filter = {};
    syncForm();
    loadList().catch(report);
  };
  $('more').onclick = () => loadList(true).catch(report);
  $('replay-dry').onclick = () =>
    dryRun('replay', { filter: Object.assign({}, filter, { asOf: asOf || '0' }) }).catch(report);
  $('discard-dry').onclick = () =>
    dryRun('discard', { filter: Object.assign({}, filter, { asOf: asOf || '0' }) }).catch(report);
  $('confirm').onclick = () => confirm().catch(report);
  $('cancel').onclick = () => {
    pending = null;
    $('preview').hidden = true;
  };

  if (token()) enter().catch(report);
  else showLogin();
})();
