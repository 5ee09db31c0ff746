import type { AppDeps } from '../../http/deps.js';
import { section } from '../section.js';

export function apiKeysPages(deps: AppDeps) {
  return section(deps, '/api-keys');
}
