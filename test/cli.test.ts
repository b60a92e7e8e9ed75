import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'dist', 'tools', 'cli', 'main.js');

function sightline(...args: string[]): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [cli, ...args], { cwd: root, encoding: 'utf8', timeout: 60_000 });
}

describe('sightline herd', () => {
  it('--json prints one JSON report with sane numbers', () => {
    // Without the governor, so that every viewer is served every tick whatever the machine's load.
    const r = sightline('herd', '--scenario', 'uniform', '--entities', '2000', '--viewers', '200', '--seconds', '1', '--no-governor', '--json');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const report = JSON.parse(lines[0]);
    expect(report).toMatchObject({
      command: 'herd',
      scenario: 'uniform',
      entities: 2000,
      viewers: 200,
      seed: 1,
      seconds: 1,
      interrupted: false,
      overrun: 'stretch',
      config: { tickHz: 20, slotsPerPacket: 98, payloadBytes: 1200 },
      ticksDue: 20,
      loop: { dropped: 0 },
    });
    // 20 ticks are due; the run is cut at 1 s of wall-clock time, so a slow machine runs fewer.
    const m = report.metrics;
    expect(m.ticks).toBe(report.loop.ticks);
    // Against the instrumented addon (npm run test:asan-addon, SIGHTLINE_ADDON set) a tick takes
    // several times longer, so fewer of the 20 fit in the second; the report's shape is still checked.
    expect(m.ticks).toBeGreaterThanOrEqual(process.env.SIGHTLINE_ADDON ? 1 : 15);
    expect(m.ticks).toBeLessThanOrEqual(20);
    expect(['completed', 'stopped']).toContain(report.loop.reason);
    expect(m.seconds).toBeGreaterThan(0.9);
    expect(m.seconds).toBeLessThan(2);
    expect(m.entities).toBe(2000);
    expect(m.viewersPerTick).toBe(200);
    expect(m.packets).toBe(m.ticks * 200);
    for (const k of ['mean', 'p50', 'p99', 'worst']) {
      expect(typeof m.passMs[k]).toBe('number');
      expect(m.passMs[k]).toBeGreaterThan(0);
    }
    expect(m.passMs.p50).toBeLessThanOrEqual(m.passMs.p99);
    expect(m.passMs.p99).toBeLessThanOrEqual(m.passMs.worst);
    expect(m.recordsPerPacket.mean).toBeGreaterThan(0);
    expect(m.recordsPerPacket.mean).toBeLessThanOrEqual(98);
    expect(m.recordsPerPacket.slots).toBe(98);
    expect(m.candidatesPerViewer).toBeGreaterThan(0);
    expect(m.bytes.total).toBeGreaterThan(m.ticks * 200 * 16);
    expect(m.bytes.perSecond).toBeGreaterThan(0);
    expect(m.bytes.perClientPerSecond).toBeCloseTo(m.bytes.perSecond / 200, 6);
    expect(m.coverage.sampledViewers).toBe(64);
    expect(m.coverage.inRange).toBeGreaterThan(0);
    expect(m.coverage.neverSentShare).toBeGreaterThanOrEqual(0);
    expect(m.coverage.neverSentShare).toBeLessThanOrEqual(1);
    expect(m.eventLoopDelayMs.p99).toBeGreaterThanOrEqual(0);
    expect(m.lateTicks).toBeGreaterThanOrEqual(0);
    expect(m.droppedTicks).toBe(0);
    expect(m.targets).toMatchObject({ passP50Ms: { target: 12 }, passP99Ms: { target: 16 }, lateTicks: { target: 0 } });
    expect(typeof m.targets.allMet).toBe('boolean');
  });

  it('a reader that closes the pipe early ends the run quietly (exit 0, no EPIPE)', async () => {
    const { spawn } = await import('node:child_process');
    const child = spawn(process.execPath, [cli, 'herd', '--scenario', 'uniform', '--entities', '2000', '--viewers', '200', '--seconds', '1'], { cwd: root });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.destroy();  // the reader goes away before the first line (as \`sightline herd | true\`)
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(stderr).not.toMatch(/EPIPE|Unhandled/);
    expect(code).toBe(0);
  });

  it.skipIf(!existsSync('/dev/full'))('an output that cannot be written (a full disk) is one line on stderr and exit code 1', () => {
    const full = openSync('/dev/full', 'w');
    try {
      const r = spawnSync(process.execPath, [cli, 'herd', '--scenario', 'uniform', '--entities', '300', '--viewers', '30', '--threads', '1', '--seconds', '0.3'], {
        cwd: root,
        encoding: 'utf8',
        timeout: 60_000,
        stdio: ['ignore', full, 'pipe'],
      });
      expect(r.status).toBe(1);
      expect(r.stderr.trim()).toMatch(/^sightline: cannot write the output: ENOSPC/);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    } finally {
      closeSync(full);
    }
  });

  it('prints a readable report without --json', () => {
    const r = sightline('herd', '--scenario', 'trips', '--entities', '500', '--viewers', '50', '--seconds', '0.5');
    expect(r.status).toBe(0);
    for (const text of ['sightline herd: trips, 500 entities, 50 viewers', '1200-byte packets (98 slots)', 'pass time p50', '≤ 12 ms', 'records per packet', 'of 98 slots', 'late ticks', 'bandwidth, per client', 'in range, never sent', 'event-loop delay', 'tick governor', 'ticks at level 0 / 1 / 2 / 3 / 4 / 5']) {
      expect(r.stdout).toContain(text);
    }
    expect(r.stdout).toMatch(/targets (met|MISSED)/);
  });

  it.each([
    [['--scenario', 'mall'], /--scenario.*'mall'.*uniform, town-square, crowd-50k, trips, speed-mix/s],
    [['--entities', '12.5'], /--entities.*'12\.5'.*integer/s],
    [['--entities', 'many'], /--entities.*'many'.*integer/s],
    [['--viewers', '-3'], /--viewers.*'-3'.*integer/s],
    [['--seconds', '-1'], /--seconds.*'-1'.*greater than 0/s],
    [['--seconds', '0'], /--seconds.*'0'.*greater than 0/s],
    [['--seconds', '0x10'], /--seconds.*'0x10'.*is invalid/s],
    [['--seconds', '1e1'], /--seconds.*'1e1'.*is invalid/s],
    [['--threads', 'x'], /--threads.*'x'.*integer/s],
    [['--overrun', 'skip'], /--overrun.*'skip'.*stretch, drop/s],
    [['--entities', '100', '--viewers', '101'], /--viewers.*'101'.*at most --entities \(100\)/s],
    [['--frobnicate'], /unknown option '--frobnicate'/],
    [['--congestion'], /--congestion' needs --net udp/],
  ])('bad flags %j exit with code 2 and name the flag', (args, message) => {
    const seconds = args.includes('--seconds') ? [] : ['--seconds', '0.1'];
    const r = sightline('herd', ...args, ...seconds, '--json');
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(message);
  });

  it('--help exits 0 and lists the flags; an unknown command exits 2', () => {
    const help = sightline('herd', '--help');
    expect(help.status).toBe(0);
    for (const flag of ['--scenario', '--entities', '--viewers', '--threads', '--seconds', '--seed', '--json']) expect(help.stdout).toContain(flag);
    const unknown = sightline('stampede');
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/unknown command 'stampede'/);
  });

  it('--version prints the package version and exits 0', () => {
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const r = sightline(flag);
      expect(r.status).toBe(0);
      expect(r.stdout.trim()).toBe(version);
    }
  });
});
