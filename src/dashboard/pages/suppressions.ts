import type { AppDeps } from '../../http/deps.js';
import { section } from '../section.js';

export function suppressionsPages(deps: AppDeps) {
  return section(deps, '/suppressions');
}
