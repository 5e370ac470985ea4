import { describeErrorRows } from './error-rows.js';

describeErrorRows('h2');
