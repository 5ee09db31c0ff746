import type { AppDeps } from '../../http/deps.js';
import { section } from '../section.js';

export function campaignsPages(deps: AppDeps) {
  return section(deps, '/campaigns');
}
