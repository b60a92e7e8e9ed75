// The sections of bench/run.mjs, in the order they run and appear in bench/RESULTS.md. Each module
// exports measure(run) (the section's result, kept in results.json), markdown(result, run) (its
// lines of the generated Markdown) and, where the stdout summary shows it, summary(result) ([label,
// value] rows). run: the options of bench/options.mjs's runOptions().
import * as pass from './pass.mjs';
import * as scaling from './scaling.mjs';
import * as snapshot from './snapshot.mjs';
import * as gather from './gather.mjs';
import * as state from './state.mjs';
import * as js from './js.mjs';
import * as peers from './peers.mjs';
import * as micro from './micro.mjs';

export const sections = { pass, scaling, snapshot, gather, state, js, peers, micro };

/** Section names in run order: pass, scaling, snapshot, gather, state, js, peers, micro. */
export const SECTIONS = Object.keys(sections);
