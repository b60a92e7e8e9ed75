// The quality harness (tools/quality/): report shape, same bytes for every strategy, what is
// robustly true of the strategies and of the moments (before, after, extrapolated) on a small
// dense run, what differs from umwelt-rs's run, determinism, and the command.
import { Command, CommanderError } from 'commander';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../tools/cli/main.js';
import { QUALITY_BANDS, QUALITY_MOMENTS, QUALITY_STRATEGIES, UMWELT_REFERENCE, formatQualityReport, runQuality, type QualityReport } from '../tools/quality/index.js';
import { registerQualityCommand } from '../tools/cli/quality-command.js';

// QUALITY_SEED=n reruns with another seed.
const SEED = Number(process.env.QUALITY_SEED ?? 7);

// umwelt-rs's scenario, 3,000 entities in a 1,024 m region: about 490 entities within a viewer's
// 256 m radius, far more than the 98 update records of a packet, so the strategies have to choose.
const SMALL = { scenario: 'umwelt', entities: 3000, viewers: 20, ticks: 60, warmupTicks: 10, seed: SEED, threads: 1, config: { regionSize: 1024 } } as const;

let report: QualityReport;

beforeAll(async () => {
  console.log(`quality test seed ${SEED} (set QUALITY_SEED to change)`);
  report = await runQuality(SMALL);
});

const byStrategy = (r: QualityReport) => Object.fromEntries(r.strategies.map((s) => [s.strategy, s]));

describe('runQuality', () => {
  it('reports every strategy over the four distance bands, at every moment', () => {
    expect(report.command).toBe('quality');
    expect(report.scenario).toBe('umwelt');
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
        for (const moment of QUALITY_MOMENTS) {
          const m = b[moment];
          expect(m.held).toBeLessThanOrEqual(b.observations);
          expect(m.notHeldShare).toBeGreaterThanOrEqual(0);
          expect(m.notHeldShare).toBeLessThanOrEqual(1);
          for (const v of [m.meanPositionErrorM, m.p99PositionErrorM, m.meanAngularErrorMrad, m.p99AngularErrorMrad, m.meanStalenessTicks, m.p99StalenessTicks]) {
            expect(Number.isFinite(v)).toBe(true);
            expect(v).toBeGreaterThanOrEqual(0);
          }
        }
        // The extrapolated figures are the before-the-packet observations, predicted.
        expect(b.extrapolated.held).toBe(b.before.held);
        expect(b.extrapolated.meanStalenessTicks).toBe(b.before.meanStalenessTicks);
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

  it('before the packet an entity refreshed every tick is one tick behind; after it, exact', () => {
    // Nearest-first sends the nearest 98 of ~490 every tick: all of them lie in the 0–32 m band.
    const near = byStrategy(report)['nearest-first'].bands[0];
    expect(near.before.meanStalenessTicks).toBe(1);
    expect(near.after.meanStalenessTicks).toBe(0);
    expect(near.after.meanPositionErrorM).toBe(0);
    // The mean move per tick of the mix: (0.25 × 0.2 + 0.25 × 1.5 + 0.1 × 6 + 0.05 × 30) / 20 m on
    // each moving axis, diagonals (half the headings) moving √2 times as far: 0.126 m to 0.178 m.
    expect(near.before.meanPositionErrorM).toBeGreaterThan(0.1);
    expect(near.before.meanPositionErrorM).toBeLessThan(0.2);
    for (const s of report.strategies) expect(s.overall.after.meanAngularErrorMrad).toBeLessThan(s.overall.before.meanAngularErrorMrad);
  });

  it('extrapolated from its two newest updates, a body moving in a straight line is where it is believed (bounces aside)', () => {
    for (const s of [byStrategy(report).accumulator, byStrategy(report)['nearest-first']]) {
      const b = s.bands[0];
      expect(b.extrapolated.meanAngularErrorMrad).toBeLessThan(b.before.meanAngularErrorMrad / 10);
    }
  });

  it('the accumulator tracks the nearest band better than round-robin', () => {
    const by = byStrategy(report);
    for (const moment of QUALITY_MOMENTS) {
      expect(by.accumulator.bands[0][moment].meanAngularErrorMrad).toBeLessThan(by['round-robin'].bands[0][moment].meanAngularErrorMrad);
      expect(by.accumulator.bands[0][moment].meanPositionErrorM).toBeLessThan(by['round-robin'].bands[0][moment].meanPositionErrorM);
    }
  });

  it('round-robin reaches every in-range entity; nearest-first leaves the far band stale', () => {
    const by = byStrategy(report);
    const rr = by['round-robin'];
    const nf = by['nearest-first'];
    expect(rr.neverUpdated).toBeLessThanOrEqual(by.accumulator.neverUpdated);
    expect(rr.neverUpdated).toBeLessThanOrEqual(nf.neverUpdated);
    expect(nf.bands[3].before.notHeldShare).toBeGreaterThan(rr.bands[3].before.notHeldShare);
  });

  it('gives the same report for the same seed', async () => {
    const again = await runQuality(SMALL);
    expect(again.strategies).toEqual(report.strategies);
  });

  it("names what differs from umwelt-rs's run, and nothing on its own scenario and counts", async () => {
    expect(report.differences).toEqual([
      'entities: 3000, umwelt-rs\'s run 60000',
      'viewers: 20, umwelt-rs\'s run 200',
      'ticks: 60, umwelt-rs\'s run 400',
      'warm-up ticks: 10, umwelt-rs\'s run 40',
      'region (m): 1024, umwelt-rs\'s run 4096',
    ]);
    // Over every entity in range rather than the gather's candidates: more entities compared, and said.
    const inRange = await runQuality({ ...SMALL, ticks: 15, warmupTicks: 10, observe: 'in-range', strategy: 'accumulator' });
    expect(report.observe).toBe('gathered');
    expect(inRange.observe).toBe('in-range');
    expect(inRange.differences).toContain("compared over every entity in range, umwelt-rs's over the candidates its gather returned");
    expect(inRange.meanInRange).toBeGreaterThan(report.meanInRange);
    await expect(runQuality({ ...SMALL, observe: 'all' as never })).rejects.toMatchObject({ code: 'ERR_SIGHTLINE_INVALID_QUALITY_OPTION' });
    const crowd = await runQuality({ scenario: 'crowd', entities: 600, viewers: 6, ticks: 12, warmupTicks: 2, seed: SEED, threads: 1 });
    expect(crowd.differences[0]).toMatch(/^scenario: crowd, not umwelt-rs's/);
    // In the crowd every entity is in every viewer's range, far more than a packet holds.
    expect(crowd.meanInRange).toBe(599);
    expect(byStrategy(crowd).accumulator.meanUpdatesPerPacket).toBeGreaterThan(97);
  });

  it("holds a governor level: fewer viewers served per tick at level 5, and the run says so", async () => {
    const base = { ...SMALL, ticks: 20, warmupTicks: 4, strategy: 'accumulator' as const };
    const l0 = await runQuality(base);
    const l5 = await runQuality({ ...base, governorLevel: 5 });
    expect(l0.meanServed).toBe(20);
    // Every viewer at twice its period, the low-priority half at 4 times: 3/8 of them a tick.
    expect(l5.meanServed).toBeCloseTo(7.5, 0);
    expect(l5.differences).toContain("the tick governor's level 5 held");
    expect(formatQualityReport(l5)).toContain('governor level 5 held');
    expect(l0.meanPassMs).toBeGreaterThan(0);
    // Level 2 halves the walk cap: each pass examines fewer entities.
    const l2 = await runQuality({ ...base, governorLevel: 2 });
    expect(l2.meanExamined).toBeLessThan(0.75 * l0.meanExamined);
    expect(l2.meanCandidates).toBeLessThanOrEqual(l2.meanExamined);
    await expect(runQuality({ ...base, governorLevel: 6 })).rejects.toMatchObject({ code: 'ERR_SIGHTLINE_INVALID_QUALITY_OPTION' });
  });

  it("prints umwelt-rs's figures apart, with what differs, on a run unlike theirs", () => {
    const text = formatQualityReport(report);
    for (const s of QUALITY_STRATEGIES) expect(text).toContain(s);
    expect(text).toContain(UMWELT_REFERENCE.source);
    expect(text).toContain('Not comparable with this run, which differs:');
    expect(text).toContain("    - region (m): 1024, umwelt-rs's run 4096");
    // No column of published figures beside the measured ones.
    expect(text.split('\n').filter((l) => l.includes('9.42')).every((l) => l.includes('publishes'))).toBe(true);
  });

  it("on a run like theirs, puts umwelt-rs's figures beside the before-the-packet rows only", () => {
    const text = formatQualityReport({ ...report, differences: [] });
    const lines = text.split('\n');
    const before = lines.findIndex((l) => l.includes('angular error, mean (mrad), before the packet') && !l.includes('extrapolated'));
    expect(lines[before + 1]).toMatch(/9\.42$/);
    expect(lines[before + 4]).toMatch(/0\.75$/);
    expect(lines.filter((l) => /9\.42$/.test(l))).toHaveLength(1);
    expect(text).toContain('the same scenario and counts, measured at the same moment');
  });

  it('shows a dash, not 0, for a band with nothing held or nothing in range', () => {
    const nothing = { ...report.strategies[0].bands[0].before, held: 0 };
    const empty = { ...report.strategies[0].bands[0], observations: 0, before: nothing, after: nothing, extrapolated: nothing };
    const strategies = report.strategies.map((s) => ({ ...s, bands: [empty, ...s.bands.slice(1)] }));
    // The cells of the first band's rows (its label, 0–32 m, has a dash of its own).
    const label = QUALITY_BANDS[0].label;
    const cells = (text: string) =>
      text.split('\n').filter((l) => l.trimStart().startsWith(label)).map((l) => l.trimStart().slice(label.length));
    const emptyRows = cells(formatQualityReport({ ...report, strategies }));
    expect(emptyRows.length).toBe(9);  // one row per section
    for (const row of emptyRows) expect(row).toMatch(/^\s+–\s+–\s+–/);
    // The same report with the band measured prints numbers there.
    for (const row of cells(formatQualityReport(report))) expect(row).not.toContain('–');
  });

  it('rejects invalid options', async () => {
    await expect(runQuality({ entities: 10, viewers: 11 })).rejects.toMatchObject({ code: 'ERR_SIGHTLINE_INVALID_QUALITY_OPTION' });
    await expect(runQuality({ strategy: 'best' as never })).rejects.toMatchObject({ code: 'ERR_SIGHTLINE_INVALID_QUALITY_OPTION' });
    await expect(runQuality({ scenario: 'mall' as never })).rejects.toMatchObject({ code: 'ERR_SIGHTLINE_INVALID_QUALITY_OPTION' });
    await expect(runQuality({ onProgress: 5 as never })).rejects.toMatchObject({ code: 'ERR_SIGHTLINE_INVALID_QUALITY_OPTION' });
    await expect(runQuality({ entites: 10 } as never)).rejects.toMatchObject({ code: 'ERR_SIGHTLINE_UNKNOWN_OPTION' });
    await expect(runQuality(5 as never)).rejects.toMatchObject({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' });
    await expect(runQuality({ signal: {} as never })).rejects.toMatchObject({ code: 'ERR_SIGHTLINE_INVALID_QUALITY_OPTION' });
    await expect(runQuality({ extrapolate: { maxTicks: -1 } })).rejects.toMatchObject({ code: 'ERR_SIGHTLINE_INVALID_ARGUMENT' });
    // umwelt: its viewers are walkers (a quarter of the entities or so).
    await expect(runQuality({ entities: 100, viewers: 90, ticks: 2 })).rejects.toThrow(/viewers must be at most the walkers drawn/);
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
