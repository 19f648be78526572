// gdrmesh status page: reads /api/summary, /api/workers, /api/results and /api/sweeps every 5 s.
// Plain DOM, no framework, ES modules with no build step: dom.js (DOM and formatting helpers),
// fabric.js (the fabric view) and this file (the refresh loop, summary, workers, results, sweeps,
// heat map and a pair's history). Every value from the API is put in the page with textContent,
// never as HTML: worker names, hostnames and reasons come from the cluster.
import {$, badge, el, fmtDuration, fmtNum, fmtSize, fmtTime, getJson, setText, tableBody}
  from './dom.js';
import {initFabric, refreshFabric, setSwitchFilter} from './fabric.js';

const REFRESH_MS = 5000;
let timer = null;
let inFlight = false;
let again = false;  // a filter changed while a refresh was running

// ---- summary -------------------------------------------------------------------------------

function renderSummary(s) {
  setText('sum-online', s.workers.online);
  setText('sum-offline', s.workers.offline);
  for (const k of ['passed', 'failed', 'skipped', 'error']) setText('sum-' + k, s.results.by_status[k]);
  for (const k of ['gpudirect', 'rdma_host', 'staged', 'emulated', 'simulated']) {
    setText('sum-' + k, s.data_path[k]);
  }
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
  } else if (r.transport === 'simulated') {
    b = badge('simulated (not RDMA)', 'path-emulated', 'a simulated worker: no bytes moved');
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
  // A simulated worker reports a check, but no byte moved.
  if (r.transport === 'simulated') return el('span', {class: 'small'}, 'simulated: no data moved');
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

// ---- sweeps --------------------------------------------------------------------------------
// The heat map is one <canvas>: cells are painted into an ImageData (one block of pixels per
// pair), so a 1024-host sweep costs a few MB of pixels, not a million DOM nodes.

const sweep = {
  list: [],
  shownKey: '',     // id + progress of the report on screen, to refetch only on change
  report: null,     // /api/sweeps/ID?verdicts=failed&limit=50
  index: null,      // Int32Array n*n: cell index or -1
  cellPx: 1,
  margin: 0,
  selected: null,   // [src, dst] host names
  pendingPair: null,  // from the URL hash, opened once the sweep is drawn
};

// A click on a switch filters the fabric view of the sweep on screen.
initFabric(() => (sweep.report ? sweep.report.progress.id : null));

function ended(p) { return p.state !== 'queued' && p.state !== 'running'; }

function renderLive(list) {
  const live = $('sweep-live');
  const running = list.find((p) => p.state === 'running');
  const queued = list.filter((p) => p.state === 'queued').length;
  if (!running) {
    live.replaceChildren(el('span', {class: 'small'},
        'No sweep running' + (queued ? ' (' + queued + ' queued)' : '') + '.'));
    return;
  }
  const pct = running.tests_total ? Math.min(100, 100 * running.tests_done / running.tests_total) : 0;
  const bar = el('span', {class: 'progress', role: 'progressbar', 'aria-valuemin': 0,
                          'aria-valuemax': running.tests_total, 'aria-valuenow': running.tests_done});
  // Through the CSSOM: the page's CSP forbids inline style attributes.
  const fill = el('span', {});
  fill.style.width = pct.toFixed(1) + '%';
  bar.append(fill);
  live.replaceChildren(badge('running', 'st-running'), ' ',
      el('span', {class: 'mono'}, running.id), ' ', running.pattern || '', bar,
      el('span', {class: 'num', id: 'live-done'}, running.tests_done + '/' + running.tests_total),
      ' ran, ',
      el('span', {class: 'num' + (running.tests_failed ? ' integrity-bad' : ''), id: 'live-failed'},
          String(running.tests_failed)),
      ' not verified, ', String(running.tests_skipped), ' skipped, ', String(running.tests_running),
      ' running; ETA ', el('span', {id: 'live-eta'}, fmtDuration(running.eta_seconds)),
      queued ? ' (' + queued + ' queued)' : '');
}

function renderSweepPick(list) {
  const sel = $('sweep-pick');
  const current = sel.value;
  const opts = [el('option', {value: ''}, 'latest')];
  for (const p of list) {
    const label = p.id + ' \u2013 ' + p.state + (p.verdict ? ' ' + p.verdict : '') +
        (p.started ? ' \u2013 ' + fmtTime(p.started) : '');
    opts.push(el('option', {value: p.id}, label));
  }
  if (current && !list.some((p) => p.id === current)) opts.push(el('option', {value: current}, current));
  sel.replaceChildren(...opts);
  sel.value = current;
}

// Which sweep to show: the chosen one, else the newest that ended, else the newest.
function chosenSweep(list) {
  const pick = $('sweep-pick').value;
  if (pick) return list.find((p) => p.id === pick) || {id: pick};
  return list.find(ended) || list[0] || null;
}

// value relative to the best cell -> colour: orange (0) through yellow (0.5) to green (1).
// Never white (not tested) and never red (failed).
function heatColour(ratio) {
  const r = Math.max(0, Math.min(1, ratio));
  let h, s, l;
  if (r < 0.5) { const t = r / 0.5; h = 28 + 22 * t; s = 90; l = 55 + 5 * t; }
  else { const t = (r - 0.5) / 0.5; h = 50 + 80 * t; s = 90 - 35 * t; l = 60 - 22 * t; }
  return hslToRgb(h, s / 100, l / 100);
}

function hslToRgb(h, s, l) {
  const k = (n) => (n + h / 30) % 12;
  const a = s * Math.min(l, 1 - l);
  const f = (n) => l - a * Math.max(-1, Math.min(k(n) - 3, Math.min(9 - k(n), 1)));
  return [Math.round(255 * f(0)), Math.round(255 * f(8)), Math.round(255 * f(4))];
}

const FAIL_RGB = [211, 47, 47];
const SKIP_RGB = [154, 161, 171];
const GRID_RGB = [226, 230, 236];

function cellRgb(c, best) {
  const verdict = c[2];
  if (verdict === 'FAIL') return FAIL_RGB;
  if (verdict === 'SKIP') return SKIP_RGB;
  const b = best[c[4]];
  if (!b || !(c[3] > 0)) return heatColour(1);
  return heatColour(c[4] === 'us' ? b / c[3] : c[3] / b);
}

function drawHeatmap(m) {
  const canvas = $('heatmap');
  const n = m.hosts.length;
  const box = canvas.parentElement.clientWidth || 800;
  if (n === 0) {
    canvas.width = 300; canvas.height = 40;
    const ctx = canvas.getContext('2d');
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    ctx.fillStyle = '#5b6575';
    ctx.font = '13px sans-serif';
    ctx.fillText('No verdicts in this sweep yet', 4, 24);
    canvas.dataset.hosts = '0';
    canvas.dataset.drawn = '0';
    sweep.index = null;
    return;
  }
  // Labels only while they fit: up to 64 hosts.
  const labels = n <= 64;
  const ctx = canvas.getContext('2d');
  ctx.font = '12px ui-monospace, monospace';
  let margin = 0;
  if (labels) {
    for (const h of m.hosts) margin = Math.max(margin, ctx.measureText(h).width);
    margin = Math.min(180, Math.ceil(margin) + 8);
  }
  const cell = Math.max(1, Math.min(36, Math.floor((Math.max(box, 320) - margin) / n)));
  const size = margin + cell * n;
  canvas.width = size;
  canvas.height = size;
  sweep.cellPx = cell;
  sweep.margin = margin;
  const img = ctx.createImageData(cell * n, cell * n);
  const px = img.data;
  px.fill(255);
  const gap = cell >= 6 ? 1 : 0;
  const stride = cell * n;
  const index = new Int32Array(n * n).fill(-1);
  m.cells.forEach((c, i) => {
    const [src, dst] = c;
    index[src * n + dst] = i;
    const rgb = cellRgb(c, m.best);
    for (let y = src * cell; y < (src + 1) * cell - gap; y++) {
      let o = (y * stride + dst * cell) * 4;
      for (let x = 0; x < cell - gap; x++, o += 4) {
        px[o] = rgb[0]; px[o + 1] = rgb[1]; px[o + 2] = rgb[2]; px[o + 3] = 255;
      }
    }
  });
  // The grid of untested cells, faintly, so that blank reads as "not tested".
  if (gap) {
    for (let i = 0; i < n * n; i++) {
      if (index[i] >= 0) continue;
      const src = Math.floor(i / n), dst = i % n;
      const o = ((src * cell + cell - 1) * stride + dst * cell) * 4;
      for (let x = 0; x < cell; x++) {
        px[o + 4 * x] = GRID_RGB[0]; px[o + 4 * x + 1] = GRID_RGB[1]; px[o + 4 * x + 2] = GRID_RGB[2];
      }
    }
  }
  ctx.clearRect(0, 0, size, size);
  ctx.putImageData(img, margin, margin);
  if (labels) {
    ctx.fillStyle = '#1d2430';
    ctx.textBaseline = 'middle';
    ctx.textAlign = 'right';
    m.hosts.forEach((h, i) => ctx.fillText(h, margin - 4, margin + i * cell + cell / 2, margin - 6));
    ctx.save();
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = 'left';
    m.hosts.forEach((h, i) => ctx.fillText(h, -margin + 4, margin + i * cell + cell / 2, margin - 6));
    ctx.restore();
  }
  if (sweep.selected) outlineSelected();
  sweep.index = index;
  canvas.dataset.hosts = String(n);
  canvas.dataset.cells = String(m.cells.length);
  canvas.dataset.drawn = '1';
}

function outlineSelected() {
  const m = sweep.report && sweep.report.matrix;
  if (!m || !sweep.selected) return;
  const s = m.hosts.indexOf(sweep.selected[0]), d = m.hosts.indexOf(sweep.selected[1]);
  if (s < 0 || d < 0) return;
  const ctx = $('heatmap').getContext('2d');
  const c = Math.max(sweep.cellPx, 3);
  ctx.strokeStyle = '#0b5cad';
  ctx.lineWidth = 2;
  ctx.strokeRect(sweep.margin + d * sweep.cellPx - 1, sweep.margin + s * sweep.cellPx - 1, c + 1, c + 1);
}

// Canvas coordinates of an event -> [src index, dst index] or null.
function cellAt(ev) {
  const canvas = $('heatmap');
  const m = sweep.report && sweep.report.matrix;
  if (!m || !sweep.index) return null;
  const rect = canvas.getBoundingClientRect();
  const x = (ev.clientX - rect.left) * (canvas.width / rect.width) - sweep.margin;
  const y = (ev.clientY - rect.top) * (canvas.height / rect.height) - sweep.margin;
  const n = m.hosts.length;
  const dst = Math.floor(x / sweep.cellPx), src = Math.floor(y / sweep.cellPx);
  if (x < 0 || y < 0 || src >= n || dst >= n) return null;
  return [src, dst];
}

function cellOf(srcName, dstName) {
  const m = sweep.report && sweep.report.matrix;
  if (!m || !sweep.index) return null;
  const s = m.hosts.indexOf(srcName), d = m.hosts.indexOf(dstName);
  if (s < 0 || d < 0) return null;
  const i = sweep.index[s * m.hosts.length + d];
  return i >= 0 ? m.cells[i] : null;
}

function splitKey(key) {
  const i = key.indexOf('/');
  return i < 0 ? {worker: key, nic: ''} : {worker: key.slice(0, i), nic: key.slice(i + 1)};
}

function sideMatches(e, key) {
  const k = splitKey(key);
  return e.worker === k.worker && (!k.nic || e.nic === k.nic);
}

async function openPair(srcName, dstName) {
  sweep.selected = [srcName, dstName];
  const rep = sweep.report;
  if (!rep) return;
  const id = rep.progress.id;
  history.replaceState(null, '', '#sweep=' + encodeURIComponent(id) + '&pair=' +
      encodeURIComponent(srcName) + '>' + encodeURIComponent(dstName));
  drawHeatmap(rep.matrix);
  const panel = $('pair-detail');
  panel.hidden = false;
  panel.dataset.src = srcName;
  panel.dataset.dst = dstName;
  setText('pair-title', srcName + ' \u2192 ' + dstName);
  const c = cellOf(srcName, dstName);
  const head = [];
  if (!c) {
    head.push(el('p', {class: 'small'}, 'Not tested in this sweep.'));
  } else {
    head.push(el('dl', {},
        el('dt', {}, 'Verdict'), el('dd', {}, badge(c[2], 'st-' + c[2])),
        el('dt', {}, 'Judged figure'), el('dd', {}, c[2] !== 'SKIP' && c[3] > 0 ? fmtNum(c[3], 2) + ' ' + c[4] : '-'),
        el('dt', {}, 'Best cell'), el('dd', {}, rep.matrix.best[c[4]] ? fmtNum(rep.matrix.best[c[4]], 2) + ' ' + c[4] : '-'),
        el('dt', {}, 'Reasons'), el('dd', {class: 'reason', id: 'pair-reasons'}, c[5] || 'none')));
  }
  $('pair-body').replaceChildren(...head, el('p', {class: 'small'}, 'Loading the runs\u2026'));
  let runs = [];
  try {
    // The pair's runs in this sweep, straight from the pair index (not the sweep's rows).
    const q = new URLSearchParams({src: splitKey(srcName).worker, dst: splitKey(dstName).worker,
                                   direction: 'one', run_id: id, limit: '1000'});
    const rows = await getJson('/api/history?' + q.toString());
    runs = rows.filter((r) => sideMatches(r.initiator, srcName) && sideMatches(r.target, dstName));
  } catch (e) {
    $('pair-body').replaceChildren(...head, el('p', {class: 'integrity-bad'}, e.message));
    return;
  }
  if (!sweep.selected || sweep.selected[0] !== srcName || sweep.selected[1] !== dstName) return;
  const items = runs.map((r) => el('div', {class: 'run', 'data-test-id': r.test_id},
      el('div', {}, badge(r.status, 'st-' + r.status), ' ', r.op + ' / ' + r.mode + ', ',
          fmtSize(r.message_size_bytes)),
      el('div', {}, measured(r)),
      // SKIPPED and ERROR moved no data: no data path to show.
      (r.status === 'PASSED' || r.status === 'FAILED') ? el('div', {}, dataPath(r)) :
          el('div', {class: 'small'}, 'did not run: no data path'),
      el('div', {class: 'small'}, 'integrity: ', integrity(r)),
      r.reason ? el('div', {class: 'reason small'}, r.reason) : null));
  if (items.length === 0) items.push(el('p', {class: 'small'}, 'No stored runs for this pair.'));
  const chart = el('canvas', {id: 'pair-history', width: 360, height: 140,
                              'aria-label': 'history of this pair over the last 90 days'});
  const chartNote = el('p', {class: 'small', id: 'pair-history-note'}, 'Loading the history\u2026');
  $('pair-body').replaceChildren(...head, el('h3', {}, 'Runs'), ...items,
                                 el('h3', {}, 'History (90 days)'), chart, chartNote);
  // The pair's results over 90 days, this direction, from the pair index (newest first).
  let past = [];
  try {
    const hq = new URLSearchParams({src: splitKey(srcName).worker, dst: splitKey(dstName).worker,
                                    direction: 'one', since: '90d', limit: '2000'});
    past = (await getJson('/api/history?' + hq.toString()))
        .filter((r) => sideMatches(r.initiator, srcName) && sideMatches(r.target, dstName));
  } catch (e) {
    chartNote.textContent = e.message;
    return;
  }
  if (!sweep.selected || sweep.selected[0] !== srcName || sweep.selected[1] !== dstName) return;
  drawHistory(chart, chartNote, past);
}

// One line per (mode, size) over time: Gb/s for bandwidth, us for latency; a failed or
// erroneous run is a red mark on its line's axis (it has no figure to plot).
function drawHistory(canvas, note, rows) {
  const series = new Map();
  for (const r of rows) {
    const m = r.measurement || {};
    const v = r.mode === 'bw' ? (m.bandwidth ? m.bandwidth.avg_gbps : null) :
                                (m.latency ? m.latency.median_us : null);
    const key = r.mode + ' ' + fmtSize(r.message_size_bytes);
    if (!series.has(key)) series.set(key, {unit: r.mode === 'bw' ? 'Gb/s' : 'us', pts: []});
    series.get(key).pts.push({t: Date.parse(r.started), v: r.status === 'PASSED' ? v : null});
  }
  canvas.dataset.points = String(rows.length);
  canvas.dataset.series = String(series.size);
  const ctx = canvas.getContext('2d');
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  if (rows.length === 0) {
    note.textContent = 'No results for this pair in the last 90 days.';
    return;
  }
  const ts = rows.map((r) => Date.parse(r.started));
  const t0 = Math.min(...ts), t1 = Math.max(...ts);
  const pad = 6, w = canvas.width - 2 * pad, h = canvas.height - 2 * pad;
  const colours = ['#2b6cb0', '#2f855a', '#b7791f', '#6b46c1', '#c53030', '#319795'];
  let i = 0;
  const legend = [];
  for (const [key, s] of series) {
    const vals = s.pts.filter((p) => p.v !== null).map((p) => p.v);
    const hi = vals.length ? Math.max(...vals) : 1;
    const colour = colours[i++ % colours.length];
    const x = (t) => pad + (t1 > t0 ? (t - t0) / (t1 - t0) : 0.5) * w;
    const y = (v) => pad + h - (hi > 0 ? v / hi : 0) * h;
    ctx.strokeStyle = colour;
    ctx.fillStyle = colour;
    ctx.beginPath();
    let first = true;
    for (const p of s.pts.slice().sort((a, b) => a.t - b.t)) {
      if (p.v === null) {
        ctx.save();
        ctx.fillStyle = '#c53030';
        ctx.fillRect(x(p.t) - 2, pad + h - 4, 4, 4);
        ctx.restore();
        continue;
      }
      if (first) ctx.moveTo(x(p.t), y(p.v)); else ctx.lineTo(x(p.t), y(p.v));
      first = false;
      ctx.fillRect(x(p.t) - 1.5, y(p.v) - 1.5, 3, 3);
    }
    ctx.stroke();
    legend.push(key + (vals.length ? ' (max ' + fmtNum(hi, 2) + ' ' + s.unit : ' (no passed run') +
                ', ' + s.pts.length + (s.pts.length === 1 ? ' run)' : ' runs)'));
  }
  note.textContent = legend.join('; ') + '; ' + fmtTime(new Date(t0).toISOString()) +
      ' \u2013 ' + fmtTime(new Date(t1).toISOString()) + '; red: failed, no figure';
}

function closePair() {
  sweep.selected = null;
  $('pair-detail').hidden = true;
  history.replaceState(null, '', location.pathname + location.search);
  if (sweep.report) drawHeatmap(sweep.report.matrix);
}

// What the sweep measured per (op, mode, size), even when every verdict is PASS.
function renderFigures(figures) {
  const rows = figures.map((f) => el('tr', {'data-figure': f.op + ' ' + f.mode + ' ' + f.message_size},
      el('td', {}, f.op), el('td', {}, f.mode), el('td', {}, fmtSize(f.message_size)),
      el('td', {class: 'r'}, String(f.pairs)),
      el('td', {class: 'r'}, fmtNum(f.min, 2) + ' ' + f.unit),
      el('td', {class: 'r'}, fmtNum(f.median, 2) + ' ' + f.unit),
      el('td', {class: 'r'}, fmtNum(f.max, 2) + ' ' + f.unit),
      el('td', {class: 'small mono'}, f.worst.map((w) => w.src + '\u2192' + w.dst + ' ' + fmtNum(w.value, 2)).join(', ') || '-'),
      el('td', {class: 'small mono'}, f.worst_hosts.map((h) => h.host + ' ' + fmtNum(h.median, 2)).join(', ') || '-')));
  tableBody('sweep-figures', rows, 9);
}

function sideText(s) {
  return s.memory + (s.gpu >= 0 ? ' gpu' + s.gpu : '') + (s.memory !== 'host' ? ' ' + s.reg : '') +
      (s.device ? ' ' + s.device : '');
}

// The sweeps of the config as they ran (an acceptance run), or a plain sweep's own spec.
function renderParts(parts) {
  const rows = parts.map((p) => el('tr', {},
      el('td', {class: 'r'}, String(p.index + 1)), el('td', {}, p.pattern || '-'), el('td', {}, p.direction),
      el('td', {}, p.op + ' ' + p.mode + ' ' + p.sizes.map(fmtSize).join(',')),
      el('td', {}, p.duration_seconds > 0 ? p.duration_seconds + ' s' : p.iterations + ' iters'),
      el('td', {class: 'small'}, sideText(p.initiator) + ' \u2192 ' + sideText(p.target)),
      el('td', {class: 'r'}, p.planned === null ? '?' : String(p.planned))));
  tableBody('sweep-parts', rows, 7);
}

function renderSweepReport(rep) {
  const p = rep.progress;
  const vc = rep.verdict_counts;
  $('sweep-head').replaceChildren(
      el('span', {class: 'mono', id: 'shown-sweep'}, p.id), ' ',
      p.verdict ? badge(p.verdict, 'st-' + p.verdict) : badge(p.state, 'st-' + p.state), ' ',
      // The words of docs/json.md: tests ran (data verified or not); verdicts PASS/FAIL/SKIP.
      (p.pattern || '') + ', ' + p.tests_done + '/' + p.tests_total + ' ran, ' +
      (p.tests_failed || 0) + ' not verified; verdicts ' +
      vc.pass + ' PASS, ' + vc.fail + ' FAIL, ' + vc.skip + ' SKIP' +
      (p.finished ? ', ended ' + fmtTime(p.finished) : p.started ? ', started ' + fmtTime(p.started) : '') +
      (p.elapsed_seconds ? ', took ' + fmtDuration(p.elapsed_seconds) : '') +
      (p.reason ? ' \u2013 ' + p.reason : ''));
  drawHeatmap(rep.matrix);
  const units = Object.keys(rep.matrix.best);
  setText('legend-scale-text', units.length ?
      'value relative to the best cell (' + units.map((u) => fmtNum(rep.matrix.best[u], 2) + ' ' + u).join(', ') + ' = full green)' :
      'value relative to the best cell');

  const sus = rep.suspects.map((s, i) => el('li', {'data-suspect': s.name, class: i === 0 ? 'top-suspect' : null},
      el('strong', {class: 'mono'}, s.name), ' ', el('span', {class: 'small'}, s.kind + ', score ' + fmtNum(s.score, 2)),
      el('ul', {class: 'list small'}, s.evidence.map((e) => el('li', {}, e)))));
  $('suspects').replaceChildren(...(sus.length ? sus : [el('li', {class: 'small'}, 'none')]));

  // The failed verdicts' first page (verdicts=failed&limit=50); the total counts them all.
  const fails = rep.verdicts.filter((v) => v.verdict === 'FAIL');
  const failTotal = rep.verdicts_page ? rep.verdicts_page.total : fails.length;
  const shown = fails.slice(0, 50).map((v) => {
    const b = el('button', {type: 'button', 'data-src': v.src, 'data-dst': v.dst}, v.src + ' \u2192 ' + v.dst);
    b.addEventListener('click', () => openPair(v.src, v.dst));
    return el('li', {class: 'failure'}, b, ' ', el('span', {class: 'small'}, fmtSize(v.message_size) +
        (v.value ? ', ' + fmtNum(v.value, 2) + ' ' + v.unit : '') + (v.retest ? ', retest' : '')),
        el('div', {class: 'reason small'}, v.reasons.join('; ')));
  });
  if (failTotal > shown.length) shown.push(el('li', {class: 'small'}, (failTotal - shown.length) + ' more'));
  $('sweep-failures').replaceChildren(...(shown.length ? shown : [el('li', {class: 'small'}, 'none')]));
  const notes = rep.notes.map((n) => el('li', {}, n));
  $('sweep-notes').replaceChildren(...(notes.length ? notes : [el('li', {}, 'none')]));
  renderFigures(rep.figures || []);
  renderParts(rep.parts || []);

  if (sweep.pendingPair) {
    const [s, d] = sweep.pendingPair;
    sweep.pendingPair = null;
    clickCell(s, d);
  } else if (sweep.selected) {
    openPair(sweep.selected[0], sweep.selected[1]);
  }
}

// Opens a pair the way a person does: a click at the centre of its cell.
function clickCell(srcName, dstName) {
  const m = sweep.report && sweep.report.matrix;
  if (!m) return;
  const s = m.hosts.indexOf(srcName), d = m.hosts.indexOf(dstName);
  if (s < 0 || d < 0) return;
  const canvas = $('heatmap');
  canvas.scrollIntoView({block: 'nearest'});
  const rect = canvas.getBoundingClientRect();
  const k = rect.width / canvas.width;
  canvas.dispatchEvent(new MouseEvent('click', {bubbles: true,
      clientX: rect.left + (sweep.margin + (d + 0.5) * sweep.cellPx) * k,
      clientY: rect.top + (sweep.margin + (s + 0.5) * sweep.cellPx) * k}));
}

async function refreshSweeps() {
  const list = await getJson('/api/sweeps?limit=50');
  sweep.list = list;
  renderLive(list);
  renderSweepPick(list);
  const chosen = chosenSweep(list);
  if (!chosen) {
    $('sweep-head').replaceChildren(el('span', {class: 'small'},
        'No sweep yet: run one with gdrmesh sweep run --pattern all-pairs.'));
    return;
  }
  const key = JSON.stringify([chosen.id, chosen.state, chosen.tests_done, chosen.finished_ms]);
  if (key === sweep.shownKey && sweep.report) return;
  const rep = await getJson('/api/sweeps/' + encodeURIComponent(chosen.id) + '?verdicts=failed&limit=50');
  if (sweep.report && sweep.report.progress.id !== rep.progress.id) sweep.selected = null;
  sweep.report = rep;
  sweep.shownKey = key;
  if (!sweep.selected) $('pair-detail').hidden = true;
  renderSweepReport(rep);
  await refreshFabric(chosen.id);
}

function readHash() {
  const h = new URLSearchParams(location.hash.replace(/^#/, ''));
  const id = h.get('sweep');
  const pair = h.get('pair');
  setSwitchFilter(h.get('switch') || '');
  if (id) {
    const sel = $('sweep-pick');
    if (![...sel.options].some((o) => o.value === id)) sel.append(el('option', {value: id}, id));
    sel.value = id;
  }
  if (pair && pair.includes('>')) {
    const i = pair.indexOf('>');
    sweep.pendingPair = [pair.slice(0, i), pair.slice(i + 1)];
  }
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
        [getJson('/api/summary'), getJson('/api/workers'), getJson(resultsUrl()), refreshSweeps()]);
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

// Errors are counted on <html data-js-errors> as well as logged: the browser test reads it.
function noteError(msg) {
  const d = document.documentElement.dataset;
  d.jsErrors = String((Number(d.jsErrors) || 0) + 1);
  d.jsErrorLast = String(msg);
}
window.addEventListener('error', (ev) => noteError(ev.message));
window.addEventListener('unhandledrejection', (ev) => noteError(ev.reason));

document.addEventListener('DOMContentLoaded', () => {
  document.documentElement.dataset.jsErrors = '0';
  readHash();
  $('sweep-form').addEventListener('change', () => {
    sweep.shownKey = '';
    sweep.selected = null;
    setSwitchFilter('');
    refresh();
  });
  $('sweep-form').addEventListener('submit', (ev) => { ev.preventDefault(); refresh(); });
  $('heatmap').addEventListener('click', (ev) => {
    const at = cellAt(ev);
    if (!at) return;
    const hosts = sweep.report.matrix.hosts;
    openPair(hosts[at[0]], hosts[at[1]]);
  });
  $('heatmap').addEventListener('mousemove', (ev) => {
    const at = cellAt(ev);
    const canvas = $('heatmap');
    if (!at) { canvas.title = ''; return; }
    const hosts = sweep.report.matrix.hosts;
    const c = cellOf(hosts[at[0]], hosts[at[1]]);
    canvas.title = hosts[at[0]] + ' → ' + hosts[at[1]] + ': ' +
        (c ? c[2] + (c[2] !== 'SKIP' ? ' ' + fmtNum(c[3], 2) + ' ' + c[4] : '') : 'not tested');
  });
  $('pair-close').addEventListener('click', closePair);
  $('filters').addEventListener('change', refresh);
  $('filters').addEventListener('submit', (ev) => { ev.preventDefault(); refresh(); });
  refresh();
});
