// Garbage collection during a herd run: the pauses (perf_hooks 'gc' entries), so that a late tick
// can be told apart from a collection, and, when the process runs with --expose-gc, the heap after
// a forced collection at the start and at the end.
import { PerformanceObserver, constants, type PerformanceEntry } from 'node:perf_hooks';

/** Pauses of one kind of collection, ms. */
export interface GcPauses {
  readonly count: number;
  readonly totalMs: number;
  readonly longestMs: number;
}

/** Memory after a forced full collection (process.memoryUsage()), bytes. */
export interface HeapAfterGc {
  /** V8's heap in use. */
  readonly heapUsed: number;
  /** Memory V8 counts outside its heap: ArrayBuffers, and native memory addons report. */
  readonly external: number;
  /** Of `external`, ArrayBuffers and SharedArrayBuffers (the World's external buffers among them). */
  readonly arrayBuffers: number;
  readonly rss: number;
}

/** What {@link GcMonitor.report} returns. */
export interface GcReport {
  /** Every collection during the run (its `gc` entries). */
  readonly pauses: GcPauses;
  /** By kind: minor (scavenge), major (mark-sweep-compact), incremental marking, weak callbacks. */
  readonly byKind: { readonly minor: GcPauses; readonly major: GcPauses; readonly incremental: GcPauses; readonly weakcb: GcPauses };
  /** Collections forced by gc() (the heap measurements' own), left out of the pauses above. */
  readonly forced: number;
  /**
   * With `node --expose-gc`: memory after a forced collection before the first tick and after the
   * last; null without it.
   */
  readonly heap: { readonly start: HeapAfterGc; readonly end: HeapAfterGc } | null;
  /**
   * The engine's own memory (World.memoryBytes, when the World has it) at the start and the end,
   * bytes; null when not known.
   */
  readonly engineBytes: { readonly start: number; readonly end: number } | null;
}

const KIND: Readonly<Record<number, 'minor' | 'major' | 'incremental' | 'weakcb'>> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

class Pauses {
  count = 0;
  totalMs = 0;
  longestMs = 0;
  add(ms: number): void {
    this.count++;
    this.totalMs += ms;
    if (ms > this.longestMs) this.longestMs = ms;
  }
  report(): GcPauses {
    return { count: this.count, totalMs: this.totalMs, longestMs: this.longestMs };
  }
}

// The forced collection available under --expose-gc, or undefined.
function exposedGc(): (() => void) | undefined {
  const g = (globalThis as { gc?: unknown }).gc;
  return typeof g === 'function' ? (g as () => void) : undefined;
}

function heapNow(): HeapAfterGc {
  const m = process.memoryUsage();
  return { heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers, rss: m.rss };
}

/**
 * Watches garbage collection from {@link start} to {@link stop}. `engineBytes`: reads the engine's
 * own memory (called at start and stop), when there is a way to.
 */
export class GcMonitor {
  readonly #all = new Pauses();
  readonly #kinds = { minor: new Pauses(), major: new Pauses(), incremental: new Pauses(), weakcb: new Pauses() };
  readonly #engineBytes: (() => number) | undefined;
  #observer: PerformanceObserver | undefined;
  #forced = 0;
  #heapStart: HeapAfterGc | undefined;
  #heapEnd: HeapAfterGc | undefined;
  #engineStart = 0;
  #engineEnd = 0;

  constructor(engineBytes?: () => number) {
    this.#engineBytes = engineBytes;
  }

  /** Forces a collection and measures the heap (with --expose-gc), then starts counting pauses. */
  start(): void {
    const gc = exposedGc();
    if (gc) {
      gc();
      this.#heapStart = heapNow();
    }
    if (this.#engineBytes) this.#engineStart = this.#engineBytes();
    this.#observer = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) this.#record(e);
    });
    this.#observer.observe({ entryTypes: ['gc'] });
  }

  #record(e: PerformanceEntry): void {
    const detail = (e as PerformanceEntry & { detail?: { kind?: number; flags?: number } }).detail;
    if (detail?.flags !== undefined && (detail.flags & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) !== 0) {
      this.#forced++;
      return;
    }
    this.#all.add(e.duration);
    const kind = detail?.kind === undefined ? undefined : KIND[detail.kind];
    if (kind) this.#kinds[kind].add(e.duration);
  }

  /**
   * Stops counting (entries still queued are taken first), then forces a collection and measures
   * the heap (with --expose-gc). Idempotent.
   */
  stop(): void {
    if (!this.#observer) return;
    for (const e of this.#observer.takeRecords()) this.#record(e);
    this.#observer.disconnect();
    this.#observer = undefined;
    const gc = exposedGc();
    if (gc && this.#heapStart) {
      gc();
      this.#heapEnd = heapNow();
    }
    if (this.#engineBytes) this.#engineEnd = this.#engineBytes();
  }

  report(): GcReport {
    return {
      pauses: this.#all.report(),
      byKind: {
        minor: this.#kinds.minor.report(),
        major: this.#kinds.major.report(),
        incremental: this.#kinds.incremental.report(),
        weakcb: this.#kinds.weakcb.report(),
      },
      forced: this.#forced,
      heap: this.#heapStart && this.#heapEnd ? { start: this.#heapStart, end: this.#heapEnd } : null,
      engineBytes: this.#engineBytes ? { start: this.#engineStart, end: this.#engineEnd } : null,
    };
  }
}
