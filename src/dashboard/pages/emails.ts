import type { AppDeps } from '../../http/deps.js';
import { section } from '../section.js';

export function emailsPages(deps: AppDeps) {
  return section(deps, '/emails');
}
