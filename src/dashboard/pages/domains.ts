import type { AppDeps } from '../../http/deps.js';
import { section } from '../section.js';

export function domainsPages(deps: AppDeps) {
  return section(deps, '/domains');
}
