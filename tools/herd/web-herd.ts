// `sightline herd --web`: a live page on the running herd. An HTTP server serves the page
// (tools/view/, static files) and the library's browser modules (dist/lib/, as the page imports
// them by name through an import map); a WsServer at /sightline lets each page join as a client
// whose avatar is a herd entity; a second WebSocket at /truth sends that page, after every tick,
// what the server's ghost table holds for its viewer and where those entities truly are.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { dirname, extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocketServer, type WebSocket } from 'ws';
import { RAW_PER_METER, SightlineError, type EntityId, type TickResult, type World } from 'sightline';
import { ConnectionRefusedError, WsServer, type WsServerCounters } from 'sightline/net';

/** Options of {@link WebHerd.start}. */
export interface WebHerdOptions {
  /** Entities the pages may take as avatars (none may be a viewer). */
  avatars: ArrayLike<EntityId>;
  /** Address and port the page is served on (port 0: a free one). */
  host: string;
  port: number;
}

/** What the `--web` part of a herd report says. */
export interface WebReport {
  url: string;
  /** Pages that joined, and the server's counters. */
  pagesJoined: number;
  server: WsServerCounters;
}

/** Pages that may watch at once. */
export const WEB_MAX_PAGES = 16;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.png': 'image/png',
};

// The page's own files: tools/view/ of the package (two levels up from dist/tools/herd/, or
// beside tools/herd/ when run from the sources).
function pageRoot(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  for (const candidate of [join(here, '..', 'view'), join(here, '..', '..', '..', 'tools', 'view')]) {
    if (existsSync(join(candidate, 'index.html'))) return candidate;
  }
  throw new Error(`the live page's files (tools/view/index.html) are not in the package beside ${here}`);
}

// The library's compiled modules (the directory of sightline/net/browser's parent: dist/lib/).
function libraryRoot(): string {
  const browser = fileURLToPath(import.meta.resolve('sightline/net/browser'));
  return dirname(dirname(browser));
}

/** Serves `file` under `root` (no path outside it, only the types above); false when there is none. */
function serveFile(res: ServerResponse, root: string, path: string): boolean {
  const file = normalize(join(root, path));
  if (!file.startsWith(root + sep)) return false;
  const type = TYPES[extname(file)];
  if (type === undefined || !existsSync(file) || !statSync(file).isFile()) return false;
  res.writeHead(200, { 'content-type': type, 'cache-control': 'no-store' });
  res.end(readFileSync(file));
  return true;
}

/**
 * The live page's server. {@link onTick} after every tick sends the tick's packets to the pages
 * and each page its truth; {@link close} ends it.
 */
export class WebHerd {
  readonly url: string;
  readonly #world: World;
  readonly #http: Server;
  readonly #server: WsServer;
  readonly #truth: WebSocketServer;
  readonly #free: EntityId[];
  // Truth sockets by the viewer they watch.
  readonly #watchers = new Map<EntityId, Set<WebSocket>>();
  #joined = 0;

  private constructor(world: World, http: Server, server: WsServer, truth: WebSocketServer, free: EntityId[], url: string) {
    this.#world = world;
    this.#http = http;
    this.#server = server;
    this.#truth = truth;
    this.#free = free;
    this.url = url;
  }

  /** Listens on host:port; resolves once the page can be loaded. */
  static async start(world: World, options: WebHerdOptions): Promise<WebHerd> {
    const pages = pageRoot();
    const lib = libraryRoot();
    const c = world.config;
    // What the page needs before it connects: the protocol hash its HELLO must carry, and the
    // packet layout when the packets carry fields or attributes (the WELCOME gives positions only).
    const layout = { regionRaw: c.regionRaw, regionShift: c.regionShift, verticalRaw: c.verticalRaw, zBits: c.zBits, quantShift: c.quantShift, fields: c.fields, attributeBytes: c.attributeBytes, protocolHash: c.protocolHash };
    const herdJson = JSON.stringify({ protocolHash: c.protocolHash, layout, payloadBytes: c.payloadBytes, tickHz: c.tickHz, viewRadius: c.viewRadius, regionSize: c.regionSize });
    const http = createServer((req: IncomingMessage, res: ServerResponse) => {
      const path = decodeURIComponent((req.url ?? '/').split('?')[0]);
      if (req.method !== 'GET') res.writeHead(405).end();
      else if (path === '/herd.json') res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(herdJson);
      else if (path === '/' ? serveFile(res, pages, 'index.html') : path.startsWith('/sightline/') ? serveFile(res, lib, path.slice('/sightline/'.length)) : serveFile(res, pages, path.slice(1))) return;
      else res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    });
    const free = Array.from(options.avatars).reverse();
    let herd: WebHerd | undefined;
    const server = new WsServer({
      config: world.config,
      world,
      server: http,
      path: '/sightline',
      maxClients: WEB_MAX_PAGES,
      onConnect: () => {
        const avatar = free.pop();
        if (avatar === undefined) throw new ConnectionRefusedError('every herd entity open to pages is watched already');
        world.addViewer(avatar, { acks: true });
        if (herd !== undefined) herd.#joined++;
        return avatar;
      },
      onDisconnect: (avatar) => {
        // The avatar is a herd entity: it stays, and may be watched from again.
        world.removeViewer(avatar);
        free.push(avatar);
      },
      onError: () => {
        // counted by the server (listenerErrors, socketErrors)
      },
    });
    const truth = new WebSocketServer({ noServer: true, maxPayload: 64 });
    http.on('upgrade', (req, socket, head) => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      if (url.pathname !== '/truth') return;
      const viewer = Number(url.searchParams.get('viewer'));
      if (!Number.isInteger(viewer) || viewer < 0) {
        socket.destroy();
        return;
      }
      truth.handleUpgrade(req, socket, head, (ws) => {
        if (herd !== undefined) herd.#watch(viewer, ws);
        else ws.terminate();
      });
    });
    await new Promise<void>((resolve, reject) => {
      // A port in use or an address this host lacks: one coded line, as the library's servers say it.
      http.once('error', (e: Error) =>
        reject(new SightlineError('ERR_SIGHTLINE_NET_BIND', `--web: cannot listen on ${options.host.includes(':') ? `[${options.host}]` : options.host}:${options.port}: ${e.message}`)),
      );
      http.listen(options.port, options.host, () => {
        http.removeAllListeners('error');
        resolve();
      });
    });
    const { port } = await server.listen();
    const shown = options.host === '0.0.0.0' ? '127.0.0.1' : options.host.includes(':') ? `[${options.host}]` : options.host;
    herd = new WebHerd(world, http, server, truth, free, `http://${shown}:${port}/`);
    return herd;
  }

  #watch(viewer: EntityId, ws: WebSocket): void {
    let set = this.#watchers.get(viewer);
    if (set === undefined) this.#watchers.set(viewer, (set = new Set()));
    set.add(ws);
    ws.on('close', () => {
      set.delete(ws);
      if (set.size === 0) this.#watchers.delete(viewer);
    });
    ws.on('error', () => ws.terminate());
  }

  /**
   * After a tick: its packets to the pages, then to each watched viewer its truth: the tick, the
   * view radius, the avatar's position and every entity of the viewer's ghost table with its true
   * position (m). A truth socket that is backed up misses the tick, like a page's packets.
   */
  onTick(result: TickResult): void {
    this.#server.sendTick(result);
    if (this.#watchers.size === 0) return;
    const world = this.#world;
    const { x, y } = world.positions;
    const m = (raw: number) => Math.round((raw / RAW_PER_METER) * 1000) / 1000;
    for (const [viewer, sockets] of this.#watchers) {
      if (!world.hasViewer(viewer) || !this.#server.has(viewer)) continue;
      const g = world.ghosts(viewer);
      const ghosts: [number, number, number][] = [];
      for (let i = 0; i < g.ids.length; i++) {
        if (g.state[i] === 2) continue;
        const id = g.ids[i];
        const live = world.isLive(id);
        const s = live ? world.slotOf(id) : -1;
        ghosts.push([id, live ? m(x[s]) : NaN, live ? m(y[s]) : NaN]);
      }
      const a = world.slotOf(viewer);
      const message = JSON.stringify({
        tick: result.tick,
        viewer,
        sequence: (g.sequence + 65535) % 65536,
        radius: world.config.viewRadius,
        avatar: [m(x[a]), m(y[a])],
        ghosts,
      });
      for (const ws of sockets) if (ws.readyState === 1 && ws.bufferedAmount < 1 << 20) ws.send(message);
    }
  }

  /** The `--web` part of the report. */
  report(): WebReport {
    return { url: this.url, pagesJoined: this.#joined, server: { ...this.#server.counters } };
  }

  /** Says BYE to the pages and stops serving. Idempotent. */
  async close(): Promise<void> {
    await this.#server.close();
    for (const set of this.#watchers.values()) for (const ws of set) ws.terminate();
    this.#truth.close();
    if (this.#http.listening) {
      await new Promise<void>((resolve) => {
        this.#http.close(() => resolve());
        this.#http.closeAllConnections();
      });
    }
  }
}
