import { describeErrorRows } from './error-rows.js';

describeErrorRows('http/1.1');
