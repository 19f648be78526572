// gdrmesh status page: reads /api/summary, /api/workers and /api/results every 5 s.
// Plain DOM, no framework. Every value from the API is put in the page with textContent, never
// as HTML: worker names, hostnames and reasons come from the cluster.
'use strict';

(function () {
  const REFRESH_MS = 5000;
  let timer = null;
  let inFlight = false;
  let again = false;  // a filter changed while a refresh was running

  function $(id) { return document.getElementById(id); }

  // el('td', {class: 'x', title: 't'}, child, 'text', ...)
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  function badge(text, cls, title) { return el('span', {class: 'badge ' + cls, title}, text); }

  function fmtSize(bytes) {
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let v = Number(bytes) || 0;
    let i = 0;
    while (i < units.length - 1 && v >= 1024 && v % 1024 === 0) { v /= 1024; i++; }
    return v + units[i];
  }

  function fmtTime(rfc3339) {
    if (!rfc3339) return '-';
    return rfc3339.replace('T', ' ').replace(/\.\d+Z$/, '').replace(/Z$/, '');
  }

  function fmtNum(v, digits) {
    return (typeof v === 'number' && isFinite(v)) ? v.toFixed(digits) : '-';
  }

  async function getJson(url) {
    const res = await fetch(url, {cache: 'no-store'});
    let body = null;
    try { body = await res.json(); } catch (e) { body = null; }
    if (!res.ok) {
      const msg = body && body.error ? body.error + (body.fix ? ' (fix: ' + body.fix + ')' : '') :
                                       'HTTP ' + res.status;
      throw new Error(url + ': ' + msg);
    }
    return body;
  }

  // ---- summary -------------------------------------------------------------------------------

  function setText(id, v) { const e = $(id); if (e) e.textContent = String(v); }

  function renderSummary(s) {
    setText('sum-online', s.workers.online);
    setText('sum-offline', s.workers.offline);
    for (const k of ['passed', 'failed', 'skipped', 'error']) setText('sum-' + k, s.results.by_status[k]);
    for (const k of ['gpudirect', 'rdma_host', 'staged', 'emulated']) setText('sum-' + k, s.data_path[k]);
    setText('sum-considered', '(last ' + s.results.considered + ')');
  }

  // ---- workers -------------------------------------------------------------------------------

  function nicList(inv) {
    if (!inv.nics || inv.nics.length === 0) return el('span', {class: 'small'}, 'none');
    return el('ul', {class: 'list'}, inv.nics.map((n) => el('li', {},
        el('span', {class: 'mono'}, n.name),
        (n.ports || []).map((p) => [' ',
          el('span', {class: 'port-' + p.state}, 'p' + p.port + ' ' + (p.state || '?')),
          el('span', {class: 'small'},
              ' ' + [p.link_layer, p.rate_gbps ? p.rate_gbps + ' Gb/s' : '',
                     p.active_mtu ? 'MTU ' + p.active_mtu : '', p.netdev].filter(Boolean).join(', '))]))));
  }

  function gpuList(inv) {
    if (!inv.gpus || inv.gpus.length === 0) return el('span', {class: 'small'}, 'none');
    return el('ul', {class: 'list'}, inv.gpus.map((g) => {
      const caps = [];
      if (g.dma_buf_supported) caps.push('dma-buf');
      if (g.gpu_direct_rdma_supported) caps.push('GDR');
      return el('li', {}, g.index + ': ' + g.name + ' ',
          el('span', {class: 'small mono'}, g.pci_bus_id),
          caps.length ? el('span', {class: 'small nowrap'}, ' (' + caps.join(', ') + ')') : null);
    }));
  }

  function renderWorkers(workers) {
    const body = $('workers-body');
    const rows = workers.map((w) => {
      const inv = w.inventory || {};
      const notes = (inv.notes || []).map((n) => el('div', {class: 'small'}, n));
      return el('tr', {'data-worker': w.name},
          el('th', {scope: 'row', class: 'mono'}, w.name),
          el('td', {}, badge(w.state, w.state === 'online' ? 'online' : 'offline')),
          el('td', {}, el('div', {}, inv.hostname || '-'), notes),
          el('td', {}, el('ul', {class: 'list'}, (inv.transports || []).map((t) => el('li', {}, t)))),
          el('td', {}, nicList(inv)),
          el('td', {}, gpuList(inv)),
          el('td', {class: 'nowrap'}, fmtTime(w.last_heartbeat)));
    });
    if (rows.length === 0) rows.push(el('tr', {class: 'empty'}, el('td', {colspan: 7}, 'No workers registered')));
    body.replaceChildren(...rows);

    // Keep the worker filter in step with the registry, keeping the current choice.
    const sel = $('f-worker');
    const current = sel.value;
    const names = workers.map((w) => w.name);
    if (current && !names.includes(current)) names.push(current);
    sel.replaceChildren(el('option', {value: ''}, 'all'),
        ...names.map((n) => el('option', {value: n}, n)));
    sel.value = current;
  }

  // ---- results -------------------------------------------------------------------------------

  function side(e) {
    let s = e.worker || '?';
    if (e.nic) s += '/' + e.nic + (e.port ? ':' + e.port : '');
    if (e.memory === 'cuda') s += ' gpu' + e.gpu;
    return s;
  }

  function memPath(e) {
    if (e.memory === 'cuda') {
      if (e.reg_path === 'staged') return 'gpu' + e.gpu + ' staged via host';
      return 'gpu' + e.gpu + ' via ' + e.reg_path;
    }
    return 'host memory';
  }

  function dataPath(r) {
    let b;
    if (r.transport === 'emulated') {
      b = badge('emulated (not RDMA)', 'path-emulated', 'worker-to-worker TCP: no RDMA was tested');
    } else if (r.gpudirect) {
      b = badge('GPUDirect RDMA', 'path-gpudirect', 'the NIC read/wrote GPU memory directly');
    } else if (r.initiator.reg_path === 'staged' || r.target.reg_path === 'staged') {
      b = badge('staged (not GPUDirect)', 'path-staged', 'GPU data copied through host memory');
    } else {
      b = badge('RDMA host memory', 'path-rdma');
    }
    const detail = r.transport + ': ' + memPath(r.initiator) + ' \u2192 ' + memPath(r.target);
    const topo = r.initiator.topo_class || r.target.topo_class;
    return [b, el('div', {class: 'small'}, detail + (topo ? ' (' + topo + ')' : ''))];
  }

  function measured(r) {
    const m = r.measurement || {};
    if (r.mode === 'bw' && m.bandwidth) {
      return [el('div', {}, fmtNum(m.bandwidth.avg_gbps, 2) + ' Gb/s'),
              m.bandwidth.peak_gbps > 0 ?
                  el('div', {class: 'small'}, 'peak ' + fmtNum(m.bandwidth.peak_gbps, 2)) : null];
    }
    if (r.mode === 'lat' && m.latency) {
      return [el('div', {}, fmtNum(m.latency.median_us, 2) + ' us'),
              m.latency.p99_us > 0 ?
                  el('div', {class: 'small'}, 'p99 ' + fmtNum(m.latency.p99_us, 2)) : null];
    }
    return '-';
  }

  function integrity(r) {
    const i = r.integrity || {};
    if (!i.checked) return el('span', {class: 'small'}, 'not checked');
    if (i.wrong_bytes > 0) {
      return el('span', {class: 'integrity-bad'},
          'FAILED: ' + i.wrong_bytes + ' wrong bytes, first at offset ' + i.first_wrong_offset +
          (i.where ? ' (' + i.where + ')' : ''));
    }
    return el('span', {class: 'integrity-ok'},
        'verified ' + fmtSize(i.bytes_checked) + (i.where ? ' (' + i.where + ')' : ''));
  }

  function renderResults(results) {
    const rows = results.map((r) => el('tr', {'data-test-id': r.test_id, 'data-status': r.status},
        el('td', {class: 'nowrap mono', title: r.test_id}, fmtTime(r.started)),
        el('td', {}, badge(r.status, 'st-' + r.status)),
        el('td', {class: 'nowrap'}, r.op + ' / ' + r.mode),
        el('td', {class: 'r nowrap'}, fmtSize(r.message_size_bytes)),
        el('td', {class: 'mono nowrap'}, el('div', {}, side(r.initiator) + ' \u2192'),
            el('div', {}, side(r.target))),
        el('td', {}, dataPath(r)),
        el('td', {class: 'r nowrap'}, measured(r)),
        el('td', {}, integrity(r)),
        el('td', {class: 'reason'}, r.reason || '')));
    if (rows.length === 0) rows.push(el('tr', {class: 'empty'}, el('td', {colspan: 9}, 'No results match')));
    $('results-body').replaceChildren(...rows);
  }

  // ---- refresh loop --------------------------------------------------------------------------

  function resultsUrl() {
    const p = new URLSearchParams();
    p.set('limit', $('f-limit').value);
    if ($('f-status').value) p.set('status', $('f-status').value);
    if ($('f-worker').value) p.set('worker', $('f-worker').value);
    return '/api/results?' + p.toString();
  }

  async function refresh() {
    if (inFlight) {
      again = true;
      return;
    }
    inFlight = true;
    clearTimeout(timer);
    const banner = $('banner');
    try {
      const [summary, workers, results] = await Promise.all(
          [getJson('/api/summary'), getJson('/api/workers'), getJson(resultsUrl())]);
      renderSummary(summary);
      renderWorkers(workers);
      renderResults(results);
      banner.hidden = true;
      setText('updated', 'Updated ' + new Date().toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC'));
    } catch (e) {
      banner.textContent = 'Cannot refresh: ' + e.message + '. Showing the last data received.';
      banner.hidden = false;
    } finally {
      inFlight = false;
      timer = setTimeout(refresh, again ? 0 : REFRESH_MS);
      again = false;
    }
  }

  document.addEventListener('DOMContentLoaded', () => {
    $('filters').addEventListener('change', refresh);
    $('filters').addEventListener('submit', (ev) => { ev.preventDefault(); refresh(); });
    refresh();
  });
})();
