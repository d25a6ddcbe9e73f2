import { searchE2eEngine } from './search-engine';
import { searchSuite } from './search-suite';

/** The black-box search suite on the service's default keyword engine (through the router: Elasticsearch). */
searchSuite(searchE2eEngine);
