import type { RouteDef } from '../http/route.js';
import { contactBookRoutes } from './contact-books.js';

export const apiRoutes: RouteDef[] = [...contactBookRoutes];
