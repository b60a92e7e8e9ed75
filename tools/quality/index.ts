// sightline/quality: the quality harness (how well clients' believed worlds track the truth, for
// the accumulator and two baselines at equal bytes). Built on the public library.
export { runQuality } from './run.js';
export { formatQualityReport } from './report.js';
export { QUALITY_STRATEGIES, QUALITY_BANDS, UMWELT_REFERENCE } from './types.js';
export type { QualityOptions, QualityReport, QualityStrategy, QualityStrategyReport, QualityBand, QualityBandReport } from './types.js';
