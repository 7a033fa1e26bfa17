/**
 * What the panel makes of the protocol's values. The types themselves are generated from
 * schema/protocol.schema.json into protocol.gen.ts.
 */
import type { JobState, Progress } from './protocol.gen';

/** States a job does not leave (the AM's TERMINAL, and LOST: the AM is gone). */
export const TERMINAL: readonly JobState[] = ['SUCCEEDED', 'FAILED', 'KILLED', 'LOST'];

export function isTerminal(state: JobState): boolean {
  return TERMINAL.includes(state);
}

/** The chief's progress in a few words: "epoch 2/3 · loss 0.1234". */
export function progressText(job: { progress?: Progress | null }): string {
  const p = job.progress || {};
  const bits: string[] = [];
  if (p.epoch !== undefined) {
    bits.push(`epoch ${p.epoch}${p.epochs ? '/' + p.epochs : ''}`);
  }
  if (typeof p.loss === 'number') {
    bits.push(`loss ${p.loss.toFixed(4)}`);
  }
  return bits.join(' · ');
}
