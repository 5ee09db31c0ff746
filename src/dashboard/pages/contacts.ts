import type { AppDeps } from '../../http/deps.js';
import { section } from '../section.js';

export function contactsPages(deps: AppDeps) {
  return section(deps, '/contacts');
}
