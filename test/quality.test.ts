// The quality harness (tools/quality/): report shape, same bytes for every strategy, what is
// robustly true of the strategies on a small dense run, determinism, and the command.
import { Command, CommanderError } from 'commander';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../tools/cli/main.js';
import { QUALITY_BANDS, QUALITY_STRATEGIES, UMWELT_REFERENCE, formatQualityReport, runQuality, type QualityReport } from '../tools/quality/index.js';
import { registerQualityCommand } from '../tools/cli/quality-command.js';

// QUALITY_SEED=n reruns with another seed.
const SEED = Number(process.env.QUALITY_SEED ?? 7);

// 3,000 entities in a 1,024 m region: about 460 entities within a viewer's 256 m radius, far more
// than the 98 update records of a packet, so the strategies have to choose.
const SMALL = { entities: 3000, viewers: 20, ticks: 60, warmupTicks: 10, seed: SEED, threads: 1, config: { regionSize: 1024 } } as const;

let report: QualityReport;

beforeAll(async () => {
  console.log(`quality test seed ${SEED} (set QUALITY_SEED to change)`);
  report = await runQuality(SMALL);
});

describe('runQuality', () => {
  it('reports every strategy over the four distance bands', () => {
    expect(report.command).toBe('quality');
    expect(report.entities).toBe(3000);
    expect(report.viewers).toBe(20);
    expect(report.measuredTicks).toBe(50);
    expect(report.seed).toBe(SEED);
    expect(report.bands.map((b) => b.label)).toEqual(['0–32 m', '32–64 m', '64–128 m', '128+ m']);
    expect(report.strategies.map((s) => s.strategy)).toEqual([...QUALITY_STRATEGIES]);
    expect(report.reference).toBe(UMWELT_REFERENCE);
    expect(report.meanInRange).toBeGreaterThan(200);
    for (const s of report.strategies) {
      expect(s.bands).toHaveLength(QUALITY_BANDS.length);
      let observations = 0;
      for (const b of [...s.bands, s.overall]) {
        expect(b.held).toBeLessThanOrEqual(b.observations);
        expect(b.notHeldShare).toBeGreaterThanOrEqual(0);
        expect(b.notHeldShare).toBeLessThanOrEqual(1);
        for (const v of [b.meanPositionErrorM, b.p99PositionErrorM, b.meanAngularErrorMrad, b.p99AngularErrorMrad, b.meanStalenessTicks, b.p99StalenessTicks]) {
          expect(Number.isFinite(v)).toBe(true);
          expect(v).toBeGreaterThanOrEqual(0);
        }
      }
      for (const b of s.bands) observations += b.observations;
      expect(s.overall.observations).toBe(observations);
      // Every strategy observes the same truth.
      expect(s.overall.observations).toBe(report.strategies[0].overall.observations);
      expect(s.neverUpdated).toBeLessThanOrEqual(s.inRangePairs);
    }
  });

  it('spends the same bytes on every strategy: full packets, never over the payload', () => {
    for (const s of report.strategies) {
      expect(s.maxPacketBytes).toBeLessThanOrEqual(report.config.payloadBytes);
      expect(s.meanPacketBytes).toBeGreaterThan(report.config.payloadBytes - 2 * 12 - 16);
    }
  });

  it('the accumulator tracks the nearest band better than round-robin', () => {
    const by = Object.fromEntries(report.strategies.map((s) => [s.strategy, s]));
    const acc = by.accumulator.bands[0];
    const rr = by['round-robin'].bands[0];
    expect(acc.meanAngularErrorMrad).toBeLessThan(rr.meanAngularErrorMrad);
    expect(acc.meanPositionErrorM).toBeLessThan(rr.meanPositionErrorM);
  });

  it('round-robin reaches every in-range entity; nearest-first leaves the far band stale', () => {
    const by = Object.fromEntries(report.strategies.map((s) => [s.strategy, s]));
    const rr = by['round-robin'];
    const nf = by['nearest-first'];
    expect(rr.neverUpdated).toBeLessThanOrEqual(by.accumulator.neverUpdated);
    expect(rr.neverUpdated).toBeLessThanOrEqual(nf.neverUpdated);
    // The nearest 98 of ~460 lie well inside 64 m: sent every tick, so no error there.
    expect(nf.bands[0].meanPositionErrorM).toBe(0);
    expect(nf.bands[3].notHeldShare).toBeGreaterThan(rr.bands[3].notHeldShare);
  });

  it('gives the same report for the same seed', async () => {
    const again = await runQuality(SMALL);
    expect(again.strategies).toEqual(report.strategies);
  });

  it('formats a table with the strategies side by side, and umwelt-rs\'s published figures apart with what differs', () => {
    const text = formatQualityReport(report);
    for (const s of QUALITY_STRATEGIES) expect(text).toContain(s);
    expect(text).toContain('9.42');
    expect(text).toContain(UMWELT_REFERENCE.source);
    expect(text).toContain('not comparable');
    // No column of published figures beside the measured ones.
    expect(text.split('\n').filter((l) => l.includes('9.42')).every((l) => l.includes('publishes'))).toBe(true);
  });

  it('shows a dash, not 0, for a band with nothing held or nothing in range', () => {
    const empty = { ...report.strategies[0].bands[0], observations: 0, held: 0 };
    const strategies = report.strategies.map((s) => ({ ...s, bands: [empty, ...s.bands.slice(1)] }));
    // The cells of the first band's rows (its label, 0–32 m, has a dash of its own).
    const label = QUALITY_BANDS[0].label;
    const cells = (text: string) =>
      text.split('\n').filter((l) => l.trimStart().startsWith(label)).map((l) => l.trimStart().slice(label.length));
    const emptyRows = cells(formatQualityReport({ ...report, strategies }));
    expect(emptyRows.length).toBe(5);  // one row per section
    for (const row of emptyRows) expect(row).toMatch(/^\s+–\s+–\s+–/);
    // The same report with the band measured prints numbers there.
    for (const row of cells(formatQualityReport(report))) expect(row).not.toContain('–');
  });

  it('rejects invalid options', async () => {
    await expect(runQuality({ entities: 10, viewers: 11 })).rejects.toMatchObject({ code: 'ERR_SIGHTLINE_INVALID_QUALITY_OPTION' });
    await expect(runQuality({ strategy: 'best' as never })).rejects.toMatchObject({ code: 'ERR_SIGHTLINE_INVALID_QUALITY_OPTION' });
    await expect(runQuality({ onProgress: 5 as never })).rejects.toMatchObject({ code: 'ERR_SIGHTLINE_INVALID_QUALITY_OPTION' });
    await expect(runQuality({ entites: 10 } as never)).rejects.toMatchObject({ code: 'ERR_SIGHTLINE_UNKNOWN_OPTION' });
    await expect(runQuality(5 as never)).rejects.toMatchObject({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' });
    await expect(runQuality({ signal: {} as never })).rejects.toMatchObject({ code: 'ERR_SIGHTLINE_INVALID_QUALITY_OPTION' });
  });

  it('a signal ends the run early: the report covers the ticks run and says it was interrupted', async () => {
    const abort = new AbortController();
    const options = { entities: 1500, viewers: 5, ticks: 40, warmupTicks: 5, strategy: 'accumulator' as const, seed: SEED, threads: 1 };
    const cut = await runQuality({ ...options, signal: abort.signal, onProgress: (done) => void (done === 12 && abort.abort()) });
    expect(cut).toMatchObject({ ticks: 12, interrupted: true, measuredTicks: 7 });
    expect(formatQualityReport(cut)).toContain('12 ticks at 20 Hz (interrupted)');
    const whole = await runQuality(options);
    expect(whole).toMatchObject({ ticks: 40, interrupted: false });
    const before = new AbortController();
    before.abort();
    expect(await runQuality({ ...options, signal: before.signal })).toMatchObject({ ticks: 0, interrupted: true, measuredTicks: 0 });
  });
});

describe('registerQualityCommand', () => {
  afterEach(() => vi.restoreAllMocks());

  function program(): Command {
    const p = new Command('sightline').exitOverride();
    registerQualityCommand(p);
    return p;
  }

  it('prints the report as JSON with --json', async () => {
    let out = '';
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      out += String(chunk);
      return true;
    });
    await program().parseAsync(['node', 'sightline', 'quality', '--entities', '1500', '--viewers', '5', '--ticks', '25', '--warmup', '5', '--strategy', 'round-robin', '--seed', String(SEED), '--threads', '1', '--no-progress', '--json']);
    const r = JSON.parse(out) as QualityReport;
    expect(r.strategies.map((s) => s.strategy)).toEqual(['round-robin']);
    expect(r.ticks).toBe(25);
    expect(r.seed).toBe(SEED);
  });

  it('refuses --warmup not below --ticks with exit code 2, naming the flag, and runs nothing', async () => {
    let out = '';
    let err = '';
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      out += String(chunk);
      return true;
    });
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      err += String(chunk);
      return true;
    });
    for (const [warmup, ticks] of [['1000', '10'], ['10', '10']]) {
      err = '';
      expect(await main(['node', 'sightline', 'quality', '--warmup', warmup, '--ticks', ticks, '--json'])).toBe(2);
      expect(err).toContain(`option '--warmup <n>' argument '${warmup}' is invalid. Expected less than --ticks (${ticks})`);
    }
    expect(out).toBe('');
    // Without --warmup, a short run warms up for all but its last tick.
    await program().parseAsync(['node', 'sightline', 'quality', '--entities', '1500', '--viewers', '5', '--ticks', '10', '--strategy', 'round-robin', '--threads', '1', '--json']);
    const r = JSON.parse(out) as QualityReport;
    expect(r.warmupTicks).toBe(9);
    expect(r.measuredTicks).toBe(1);
  });

  it('runQuality refuses warmupTicks not below ticks', async () => {
    await expect(runQuality({ ...SMALL, ticks: 10, warmupTicks: 10 })).rejects.toMatchObject({ code: 'ERR_SIGHTLINE_INVALID_QUALITY_OPTION' });
    await expect(runQuality({ ...SMALL, ticks: 10, warmupTicks: 1000 })).rejects.toThrow('warmupTicks must be an integer from 0 to 9, received 1000');
  });

  it('refuses an unknown strategy', async () => {
    const p = program();
    p.configureOutput({ writeErr: () => {} });
    p.commands[0].configureOutput({ writeErr: () => {} });
    await expect(p.parseAsync(['node', 'sightline', 'quality', '--strategy', 'best'])).rejects.toBeInstanceOf(CommanderError);
  });
});
