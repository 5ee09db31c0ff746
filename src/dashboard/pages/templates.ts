import type { AppDeps } from '../../http/deps.js';
import { section } from '../section.js';

export function templatesPages(deps: AppDeps) {
  return section(deps, '/templates');
}
