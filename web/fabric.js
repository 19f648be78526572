// The status page's fabric view (/api/sweeps/ID/fabric): each link's row coloured by its
// verdict, worst first as the API orders them; one row per switch (or host end) with its links'
// counts; the hosts under each switch (InfiniBand) or each host switch port (RoCE, LLDP); and the
// switch filter. Every value from the API goes into the page as text (dom.js).
import {$, el, fmtNum, getJson, setText, tableBody} from './dom.js';

const fabric = {
  onlySwitch: '',  // the switch filter (#switch=NAME, or a click on a switch); '' = every switch
  shownSweepId: () => null,  // the id of the sweep on screen, null when none (initFabric)
};

// `shownSweepId()`: the id of the sweep the page shows, which a click on a switch filters.
export function initFabric(shownSweepId) { fabric.shownSweepId = shownSweepId; }

// The switch filter for the next refreshFabric ('' = every switch).
export function setSwitchFilter(name) { fabric.onlySwitch = name; }

function linkClass(l) {
  return l.fails ? 'link-fail' : l.verdict === 'not_covered' ? 'link-uncovered' : 'link-ok';
}

function renderFabric(fab) {
  const c = fab.counts;
  const total = c.not_ok + c.not_covered + c.ok;
  $('fabric-head').replaceChildren(total ?
      el('span', {id: 'fabric-counts'}, total + ' links: ' + c.not_ok + ' not ok, ' + c.not_covered +
          ' not covered, ' + c.ok + ' ok' + (c.not_ok ? ' \u2013 the sweep fails on them' : '')) :
      fab.lldp ?
      el('span', {id: 'fabric-counts'}, 'RoCE fabric known from LLDP: no switch tables or counters, ' +
          'so no link verdicts; the host switch ports below are estimates') :
      el('span', {}, 'no link verdicts (a sweep on a discovered fabric with a fabric_reader has them)'));
  $('fabric-filter').replaceChildren(...(fab.switch ? [
    el('span', {id: 'fabric-only'}, 'Only switch ' + fab.switch + ' '),
    switchButton('', 'show every switch')] : []));
  const nodes = fab.nodes.map((n) => el('tr', {'data-node': n.name, class: n.not_ok ? 'link-fail' : n.ok ? 'link-ok' : 'link-uncovered'},
      el('td', {class: 'mono'}, n.name), el('td', {class: 'r'}, String(n.links)),
      el('td', {class: 'r'}, String(n.not_ok)), el('td', {class: 'r'}, String(n.not_covered)),
      el('td', {class: 'r'}, String(n.ok)), el('td', {}, n.worst)));
  tableBody('fabric-nodes', nodes, 6);
  const end = (e) => e.name + ' port ' + e.port + ' (' + e.guid + ')';
  const links = fab.links.map((l, i) => el('tr', {'data-link': l.link, 'data-verdict': l.verdict,
      'data-rank': String(i), class: linkClass(l)},
      el('td', {}, l.verdict === 'not_covered' ? 'not covered' : l.verdict), el('td', {class: 'mono'}, l.link),
      el('td', {class: 'small mono'}, end(l.a) + ' \u2194 ' + end(l.b)),
      el('td', {class: 'small'}, l.evidence.join('; ') || '-')));
  tableBody('fabric-links', links, 4);
  renderSwitchHosts(fab.switch_hosts);
  renderLldpPorts(fab.lldp);
}

// A button that filters the fabric view to one switch ('' = every switch).
function switchButton(name, label) {
  const b = el('button', {type: 'button', class: 'switch-pick', 'data-pick-switch': name}, label || name);
  b.addEventListener('click', () => showSwitch(name));
  return b;
}

function suspectText(s) {
  return s ? s.kind + ' ' + s.name + ', score ' + fmtNum(s.score, 2) : '';
}

function unplacedItems(list, lldp) {
  return list.map((u) => el('li', {'data-unplaced': u.end}, el('span', {class: 'mono'}, u.end), ': ' +
      (lldp ? u.tests + (u.tests === 1 ? ' test, ' : ' tests, ') + u.failed + ' failed' :
              u.pass + ' PASS, ' + u.fail + ' FAIL, ' + u.skip + ' SKIP') +
      ' \u2013 ' + u.why + (lldp ? ' (' + u.estimate + ')' : '')));
}

// InfiniBand: each switch (worst first) with the hosts cabled to it and their verdicts.
function renderSwitchHosts(t) {
  $('fabric-hosts-part').hidden = !t;
  if (!t) return;
  const rows = [];
  t.switches.forEach((s, i) => {
    rows.push(el('tr', {class: 'switch-row ' + (s.fail ? 'link-fail' : 'link-ok'), 'data-switch': s.name,
                        'data-rank': String(i)},
        el('td', {}, switchButton(s.name)),
        el('td', {colspan: '3', class: 'small'}, s.hosts + ' hosts, ' + s.hosts_failing + ' with a FAIL, ' +
            s.suspects + ' named by a suspect (' + s.guid + ')'),
        el('td', {class: 'r'}, String(s.pass)), el('td', {class: 'r'}, String(s.fail)),
        el('td', {class: 'r'}, String(s.skip)), el('td', {})));
    for (const r of s.rows) {
      rows.push(el('tr', {class: 'host-row ' + (r.fail ? 'link-fail' : 'link-ok'), 'data-host': r.host,
                          'data-of-switch': s.name},
          el('td', {}), el('td', {class: 'mono'}, r.host),
          el('td', {class: 'mono'}, r.hca + ' port ' + r.hca_port),
          el('td', {class: 'r'}, String(r.switch_port)),
          el('td', {class: 'r'}, String(r.pass)), el('td', {class: 'r'}, String(r.fail)),
          el('td', {class: 'r'}, String(r.skip)), el('td', {class: 'small'}, suspectText(r.suspect))));
    }
  });
  tableBody('fabric-switch-hosts', rows, 8);
  const un = unplacedItems(t.unplaced, false);
  $('fabric-hosts-unplaced').replaceChildren(...(un.length ? un : [el('li', {class: 'small'}, 'none')]));
}

// RoCE (LLDP): each host switch port, the switch_port suspects first; every line an estimate.
function renderLldpPorts(t) {
  $('fabric-lldp-part').hidden = !t;
  if (!t) return;
  setText('fabric-lldp-estimate', t.estimate);
  const rows = t.ports.map((p, i) => el('tr', {'data-port': p.switch_port, 'data-rank': String(i),
      class: p.suspect ? 'link-fail' : p.tests === 0 ? 'link-uncovered' : p.failed ? 'link-slow' : 'link-ok'},
      el('td', {}, switchButton(p.switch)), el('td', {class: 'mono'}, p.port),
      el('td', {class: 'mono'}, p.nic + '/' + p.nic_port), el('td', {class: 'mono'}, p.netdev || '-'),
      el('td', {class: 'r'}, String(p.tests)), el('td', {class: 'r'}, String(p.failed)),
      el('td', {class: 'small'}, suspectText(p.suspect)), el('td', {class: 'small estimate'}, p.estimate)));
  tableBody('fabric-lldp', rows, 8);
  const un = unplacedItems(t.unplaced, true);
  $('fabric-lldp-unplaced').replaceChildren(...(un.length ? un : [el('li', {class: 'small'}, 'none')]));
}

export async function refreshFabric(id) {
  // The fabric view is its own request: a failure of it leaves the sweep shown, and says so.
  const q = fabric.onlySwitch ? '?switch=' + encodeURIComponent(fabric.onlySwitch) : '';
  try {
    renderFabric(await getJson('/api/sweeps/' + encodeURIComponent(id) + '/fabric' + q));
  } catch (e) {
    $('fabric-head').replaceChildren(el('span', {class: 'reason'}, 'Cannot show the fabric: ' + e.message));
  }
}

// A click on a switch: the fabric view of that switch only ('' = every switch), kept in the URL.
function showSwitch(name) {
  const id = fabric.shownSweepId();
  if (!id) return;
  fabric.onlySwitch = name;
  history.replaceState(null, '', '#sweep=' + encodeURIComponent(id) +
      (name ? '&switch=' + encodeURIComponent(name) : ''));
  refreshFabric(id);
}

