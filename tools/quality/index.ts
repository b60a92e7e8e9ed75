// sightline/quality: the quality harness (how well clients' believed worlds track the truth, for
// the accumulator and two baselines at equal bytes, before and after each tick's packet). Built
// on the public library.
export { runQuality } from './run.js';
export { formatQualityReport } from './report.js';
export { QUALITY_STRATEGIES, QUALITY_BANDS, QUALITY_MOMENTS, UMWELT_REFERENCE } from './types.js';
export { QUALITY_SCENARIOS, QUALITY_SCENARIO_DEFAULTS } from './scenarios.js';
export type { QualityScenario, QualityScenarioDefaults } from './scenarios.js';
export type {
  QualityOptions,
  QualityReport,
  QualityStrategy,
  QualityStrategyReport,
  QualityBand,
  QualityBandReport,
  QualityMoment,
  QualityMomentReport,
} from './types.js';
