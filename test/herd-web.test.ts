// `sightline herd --web` without a browser: the page's files and the library's browser modules
// are served (nothing else), a WsClient in Node joins like the page does and holds, tick by tick,
// what the truth feed's ghost table says; bad flags are usage errors.
import { describe, it, expect, afterEach } from 'vitest';
import { spawnSync } from 'node:child_process';
import NodeWebSocket from 'ws';
import { WsClient, type WebSocketClass } from '../lib/net/ws-client.js';
import { cli, root, startWebHerd, stopWebHerd } from './helpers/herd-web.js';
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});


describe('sightline herd --web', () => {
  it('serves the page and the library, nothing else; a client joins and holds what the ghost table holds at each tick', async () => {
    const { url, herd, output } = await startWebHerd(['--scenario', 'uniform', '--entities', '2000', '--threads', '1', '--seconds', '60'], cleanups);
    const get = async (path: string) => {
      const r = await fetch(new URL(path, url));
      return { status: r.status, type: r.headers.get('content-type'), body: await r.text() };
    };
    const index = await get('/');
    expect(index.status).toBe(200);
    expect(index.body).toContain('"sightline/net/browser": "/sightline/net/browser.js"');
    expect((await get('/view.js')).type).toMatch(/^text\/javascript/);
    const browser = await get('/sightline/net/browser.js');
    expect(browser.status).toBe(200);
    expect(browser.body).toContain('WsClient');
    const herdJson = JSON.parse((await get('/herd.json')).body) as { protocolHash: number };
    for (const path of ['/sightline/../../package.json', '/%2e%2e/package.json', '/sightline/net/browser.d.ts', '/nothing.js', '/sightline/index.js.unknown']) {
      expect((await get(path)).status, path).toBe(404);
    }
    // Joins like the page: the WsClient, then the truth feed for its viewer.
    const held = new Map<number, string>();
    const c = new WsClient({
      WebSocket: NodeWebSocket as unknown as WebSocketClass,
      onPacket: (_status, world) => held.set(world.newestTick, [...world.entities.keys()].sort((a, b) => a - b).join(',')),
    });
    cleanups.push(() => c.close());
    const base = url.replace('http:', 'ws:');
    const avatar = await c.connect(`${base}sightline`, herdJson.protocolHash);
    const truth = new NodeWebSocket(`${base}truth?viewer=${avatar}`);
    cleanups.push(() => truth.terminate());
    let compared = 0;
    let matched = 0;
    let sawRadius = 0;
    const truths = new Map<number, string>();
    truth.on('message', (m: Buffer) => {
      const t = JSON.parse(String(m)) as { tick: number; radius: number; avatar: [number, number]; ghosts: [number, number, number][] };
      sawRadius = t.radius;
      truths.set(t.tick, t.ghosts.map((g) => g[0]).sort((a, b) => a - b).join(','));
    });
    const end = performance.now() + 30_000;
    while (compared < 20 && performance.now() < end) {
      await new Promise((r) => setTimeout(r, 50));
      for (const [tick, ids] of truths) {
        const h = held.get(tick);
        if (h === undefined) continue;
        compared++;
        if (h === ids) matched++;
        truths.delete(tick);
      }
    }
    expect(compared).toBeGreaterThanOrEqual(20);
    expect(matched).toBe(compared);
    expect(sawRadius).toBe(256);
    await c.close();
    await stopWebHerd(herd);
    const report = JSON.parse(output().trim()) as { web: { url: string; pagesJoined: number; server: { connects: number; disconnects: number } } };
    expect(report.web).toMatchObject({ url, pagesJoined: 1, server: { connects: 1 } });
  }, 90_000);

  for (const flags of [['--web-port', '80'], ['--web-host', '127.0.0.1'], ['--web', '--web-port', '70000'], ['--web', '--scenario', 'uniform', '--entities', '10', '--viewers', '10']]) {
    it(`bad flags ${JSON.stringify(flags)} exit with code 2 and name the flag`, () => {
      const r = spawnSync(process.execPath, [cli, 'herd', ...flags, '--seconds', '1'], { cwd: root, encoding: 'utf8' });
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(/--web/);
    });
  }

  it('a port in use is one coded line on stderr and exit code 1, no stack', async () => {
    const { createServer } = await import('node:net');
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => taken.close(() => resolve())));
    const port = (taken.address() as { port: number }).port;
    const r = spawnSync(process.execPath, [cli, 'herd', '--web', '--web-port', String(port), '--scenario', 'uniform', '--entities', '100', '--seconds', '1', '--no-progress'], {
      cwd: root,
      encoding: 'utf8',
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^sightline: --web: cannot listen on 127\\.0\\.0\\.1:${port}: listen EADDRINUSE.*\\(ERR_SIGHTLINE_NET_BIND\\)\\n$`));
  });
});
