import type { AppDeps } from '../../http/deps.js';
import { section } from '../section.js';

export function webhooksPages(deps: AppDeps) {
  return section(deps, '/webhooks');
}
