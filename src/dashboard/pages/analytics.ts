import type { AppDeps } from '../../http/deps.js';
import { section } from '../section.js';

export function analyticsPages(deps: AppDeps) {
  return section(deps, '/analytics');
}
