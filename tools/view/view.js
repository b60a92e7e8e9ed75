// The live page: joins the herd as a WebSocket client (sightline/net/browser's WsClient, its
// ClientWorld), and draws what this client believes next to the truth the server sends for its
// viewer after every tick. Compares, tick by tick, the entities the client holds with those the
// server's ghost table says it holds, and reports it on window.sightlineView (the browser test
// reads it there).
import { WsClient, PROTOCOL_VERSION } from 'sightline/net/browser';

/** What the page reports: read by people (the panel) and by the browser test. */
const view = {
  status: 'connecting',
  error: null,
  avatar: null,
  tick: 0,
  held: 0,
  ghosts: 0,
  /** Ticks for which both the client's world after that tick's packet and the server's ghost table were known. */
  ticksCompared: 0,
  /** Of those, ticks where the two held exactly the same entities. */
  ticksMatched: 0,
  ticksMismatched: 0,
  /** The last comparison: its tick, the counts, and the ids on one side only. */
  last: null,
  packets: 0,
  /** Game-packet bytes received over the last second, and the mean fill of those packets (bytes / payloadBytes). */
  bytesPerSecond: 0,
  fill: 0,
};
window.sightlineView = view;

const $ = (id) => document.getElementById(id);
const HISTORY = 64; // ticks of held sets and truths kept for matching
const heldByTick = new Map(); // tick -> sorted ids the client held after that tick's packet
const truthByTick = new Map(); // tick -> the server's truth message
let latestTruth = null;
let client = null;
let payloadBytes = 1200;
const recent = []; // [time ms, bytes] of game packets over the last second

// The browser's WebSocket, observed: each game packet's size, for fill and bytes per second.
class CountingWebSocket extends WebSocket {
  set onmessage(fn) {
    super.onmessage =
      fn === null
        ? null
        : (ev) => {
            if (ev.data instanceof ArrayBuffer && ev.data.byteLength > 0 && new Uint8Array(ev.data)[0] === PROTOCOL_VERSION) {
              recent.push([performance.now(), ev.data.byteLength]);
            }
            fn(ev);
          };
  }
  get onmessage() {
    return super.onmessage;
  }
}

function sameIds(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function compare() {
  for (const [tick, truth] of truthByTick) {
    const held = heldByTick.get(tick);
    if (held === undefined) continue;
    const ghosts = truth.ghosts.map((g) => g[0]).sort((p, q) => p - q);
    const match = sameIds(held, ghosts);
    view.ticksCompared++;
    if (match) view.ticksMatched++;
    else view.ticksMismatched++;
    const g = new Set(ghosts);
    const h = new Set(held);
    view.last = {
      tick,
      match,
      held: held.length,
      ghosts: ghosts.length,
      onlyClient: held.filter((id) => !g.has(id)).slice(0, 20),
      onlyServer: ghosts.filter((id) => !h.has(id)).slice(0, 20),
    };
    truthByTick.delete(tick);
    heldByTick.delete(tick);
  }
  for (const map of [heldByTick, truthByTick]) {
    for (const tick of map.keys()) if (tick < view.tick - HISTORY) map.delete(tick);
  }
}

async function start() {
  const herd = await (await fetch('/herd.json')).json();
  payloadBytes = herd.payloadBytes;
  client = new WsClient({
    WebSocket: CountingWebSocket,
    onPacket: (status, world) => {
      if (status !== 'applied') return;
      view.packets++;
      const tick = world.newestTick;
      if (tick < view.tick) return; // a late packet: the held set is that of the newest
      view.tick = tick;
      view.held = world.size;
      heldByTick.set(tick, Array.from(world.entities.keys()).sort((p, q) => p - q));
      compare();
    },
    onDisconnect: (reason) => {
      view.status = `disconnected (${reason})`;
    },
  });
  const base = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}`;
  const avatar = await client.connect(`${base}/sightline`, herd.layout ?? herd.protocolHash);
  view.avatar = avatar;
  view.status = 'connected';
  const truth = new WebSocket(`${base}/truth?viewer=${avatar}`);
  truth.onmessage = (ev) => {
    const t = JSON.parse(ev.data);
    latestTruth = t;
    view.ghosts = t.ghosts.length;
    truthByTick.set(t.tick, t);
    compare();
  };
}

// --------------------------------------------------------------------------------------------
// Drawing.

const canvas = $('view');
const ctx = canvas.getContext('2d');

function draw() {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth;
  const h = canvas.clientHeight;
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
  }
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = '#0f1115';
  ctx.fillRect(0, 0, w, h);
  const t = latestTruth;
  if (t !== null && client !== null && client.state === 'connected') {
    const [ax, ay] = t.avatar;
    const scale = (Math.min(w, h) * 0.45) / (t.radius * 1.15); // px per m
    const px = (x) => w / 2 + (x - ax) * scale;
    const py = (y) => h / 2 - (y - ay) * scale;
    ctx.strokeStyle = '#3b4252';
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.arc(w / 2, h / 2, t.radius * scale, 0, 2 * Math.PI);
    ctx.stroke();
    const world = client.world;
    // Truth: hollow circles; belief: filled dots; a line from one to the other.
    for (const [id, x, y] of t.ghosts) {
      const e = world.get(id);
      if (Number.isFinite(x)) {
        ctx.strokeStyle = '#a0a8b8';
        ctx.beginPath();
        ctx.arc(px(x), py(y), 3.5, 0, 2 * Math.PI);
        ctx.stroke();
        if (e !== undefined) {
          ctx.strokeStyle = 'rgba(95, 179, 255, 0.45)';
          ctx.beginPath();
          ctx.moveTo(px(x), py(y));
          ctx.lineTo(px(e.x), py(e.y));
          ctx.stroke();
        }
      }
    }
    ctx.fillStyle = '#5fb3ff';
    for (const e of world.entities.values()) {
      ctx.beginPath();
      ctx.arc(px(e.x), py(e.y), 2.5, 0, 2 * Math.PI);
      ctx.fill();
    }
    ctx.fillStyle = '#ff6b6b';
    ctx.beginPath();
    ctx.arc(w / 2, h / 2, 4.5, 0, 2 * Math.PI);
    ctx.fill();
  }
  // Bytes per second and fill over the last second of game packets.
  const now = performance.now();
  while (recent.length > 0 && now - recent[0][0] > 1000) recent.shift();
  let bytes = 0;
  for (const [, b] of recent) bytes += b;
  view.bytesPerSecond = bytes;
  view.fill = recent.length > 0 ? bytes / recent.length / payloadBytes : 0;
  $('status').textContent = view.status;
  $('status').className = view.status === 'connected' ? 'ok' : view.error ? 'bad' : '';
  $('avatar').textContent = view.avatar ?? '–';
  $('tick').textContent = view.tick || '–';
  $('held').textContent = view.held;
  $('ghosts').textContent = view.ghosts;
  $('compared').textContent = `${view.ticksMatched} of ${view.ticksCompared} matched`;
  $('radius').textContent = t ? `${t.radius} m` : '–';
  $('fill').textContent = `${(view.fill * 100).toFixed(1)} % of ${payloadBytes} B`;
  $('rate').textContent = `${(view.bytesPerSecond / 1024).toFixed(1)} KiB/s, ${recent.length} packets/s`;
  requestAnimationFrame(draw);
}

requestAnimationFrame(draw);
start().catch((e) => {
  view.status = 'failed';
  view.error = String(e?.message ?? e);
  $('status').textContent = `failed: ${view.error}`;
  $('status').className = 'bad';
});
