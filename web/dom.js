// The status page's DOM and formatting helpers, and its one way to read the API (getJson).
// Every value from the API goes into the page as text: el() and setText() make text nodes,
// never HTML (worker names, hostnames and reasons come from the cluster).

export function $(id) { return document.getElementById(id); }

// el('td', {class: 'x', title: 't'}, child, 'text', ...)
export function el(tag, attrs, ...children) {
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

export function badge(text, cls, title) { return el('span', {class: 'badge ' + cls, title}, text); }

export function fmtSize(bytes) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = Number(bytes) || 0;
  let i = 0;
  while (i < units.length - 1 && v >= 1024 && v % 1024 === 0) { v /= 1024; i++; }
  return v + units[i];
}

export function fmtTime(rfc3339) {
  if (!rfc3339) return '-';
  return rfc3339.replace('T', ' ').replace(/\.\d+Z$/, '').replace(/Z$/, '');
}

export function fmtNum(v, digits) {
  return (typeof v === 'number' && isFinite(v)) ? v.toFixed(digits) : '-';
}

export function fmtDuration(sec) {
  if (typeof sec !== 'number' || !isFinite(sec) || sec < 0) return 'unknown';
  sec = Math.round(sec);
  if (sec < 60) return sec + ' s';
  if (sec < 3600) return Math.floor(sec / 60) + ' min ' + (sec % 60) + ' s';
  return Math.floor(sec / 3600) + ' h ' + Math.floor((sec % 3600) / 60) + ' min';
}

export async function getJson(url) {
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

export function setText(id, v) { const e = $(id); if (e) e.textContent = String(v); }

// A table's body: `rows`, or one 'none' row across `columns` when there is none.
export function tableBody(id, rows, columns) {
  $(id).tBodies[0].replaceChildren(...(rows.length ? rows :
      [el('tr', {class: 'empty'}, el('td', {colspan: String(columns)}, 'none'))]));
}
