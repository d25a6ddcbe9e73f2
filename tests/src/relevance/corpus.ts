/**
 * A relevance set written for this project: invented entities (so no model or
 * engine has seen them), each described by five template passages, plus
 * distractor passages that share vocabulary without naming any entity.
 * Queries are hand-written: half name the entity or its exact words (keyword
 * style), half paraphrase a fact without its words (meaning style). Judgements:
 * grade 2 for the passage that answers the query, grade 1 for the entity's
 * other passages when the query is about the entity as a whole.
 */
export interface Entity {
  name: string;
  kind: string;
  place: string;
  feature: string;
  resource: string;
  founder: string;
  year: number;
  sense: string;
  danger: string;
}

export const ENTITIES: Entity[] = [
  {
    name: 'Velmora',
    kind: 'fishing village',
    place: 'a rocky northern bay',
    feature: 'blue-painted stilt houses',
    resource: 'oyster harvesting',
    founder: 'Ansel Drury',
    year: 1642,
    sense: 'the smell of brine and tar',
    danger: 'winter storms that flood the harbour',
  },
  {
    name: 'Quorrith',
    kind: 'mountain monastery',
    place: 'a cliff above the Tarn valley',
    feature: 'a bell cast from melted coins',
    resource: 'goat cheese sold to pilgrims',
    founder: 'Sister Imeld',
    year: 1188,
    sense: 'chanting that echoes at dawn',
    danger: 'rockfalls on the only path',
  },
  {
    name: 'Brassfen',
    kind: 'canal town',
    place: 'the marshy lowlands',
    feature: 'forty drawbridges',
    resource: 'peat cutting',
    founder: 'Hendrik Vell',
    year: 1530,
    sense: 'creaking wooden lock gates',
    danger: 'fog so thick that barges collide',
  },
  {
    name: 'Ostrava Minor',
    kind: 'desert oasis',
    place: 'the salt flats of the south',
    feature: 'a spring that never freezes or dries',
    resource: 'date palms',
    founder: 'the caravan master Yusri',
    year: 980,
    sense: 'the rustle of palm fronds',
    danger: 'sandstorms in late summer',
  },
  {
    name: 'Kelvane',
    kind: 'glass-making city',
    place: 'a river delta',
    feature: 'furnaces that burn day and night',
    resource: 'coloured glass beads',
    founder: 'Marisol Kell',
    year: 1401,
    sense: 'the roar of the kilns',
    danger: 'fires in the workshop quarter',
  },
  {
    name: 'Thundle',
    kind: 'hill fort',
    place: 'a grassy ridge',
    feature: 'three rings of earthen ramparts',
    resource: 'sheep grazing',
    founder: 'an unnamed iron-age chieftain',
    year: -300,
    sense: 'wind whistling over the ramparts',
    danger: 'erosion of the outer ditch',
  },
  {
    name: 'Pellucid Station',
    kind: 'polar research base',
    place: 'an ice shelf',
    feature: 'a radio mast taller than any building nearby',
    resource: 'ice core samples',
    founder: 'Dr. Ingrid Saeter',
    year: 1957,
    sense: 'the hum of generators',
    danger: 'crevasses opening near the runway',
  },
  {
    name: 'Marrowgate',
    kind: 'market town',
    place: 'a crossroads of old trade routes',
    feature: 'a covered market hall with an iron roof',
    resource: 'wool trading',
    founder: 'the merchant guild',
    year: 1296,
    sense: 'auctioneers shouting prices',
    danger: 'plague outbreaks in crowded lanes',
  },
  {
    name: 'Zephyrine',
    kind: 'airship dock',
    place: 'a plateau above the clouds',
    feature: 'mooring towers for dirigibles',
    resource: 'hydrogen production',
    founder: 'Captain Lorne Hask',
    year: 1911,
    sense: 'the flap of canvas envelopes',
    danger: 'hydrogen explosions',
  },
  {
    name: 'Gundersholm',
    kind: 'island lighthouse',
    place: 'a reef in the western sea',
    feature: 'a lens made of hundreds of prisms',
    resource: 'keeping ships off the rocks',
    founder: 'the harbour commission',
    year: 1823,
    sense: 'the sweep of the beam at night',
    danger: 'waves breaking over the gallery',
  },
  {
    name: 'Ashcombe',
    kind: 'coal mining town',
    place: 'a narrow valley',
    feature: 'rows of terraced cottages',
    resource: 'anthracite coal',
    founder: 'the Ashcombe Colliery Company',
    year: 1849,
    sense: 'coal dust on every windowsill',
    danger: 'firedamp explosions underground',
  },
  {
    name: 'Lirienne',
    kind: 'vineyard estate',
    place: 'sunny south-facing slopes',
    feature: 'cellars carved into chalk',
    resource: 'sparkling white wine',
    founder: 'the Lirienne family',
    year: 1762,
    sense: 'the scent of fermenting grapes',
    danger: 'late frosts that kill the buds',
  },
  {
    name: 'Corvath',
    kind: 'river ferry crossing',
    place: 'a wide muddy river',
    feature: 'a chain-drawn raft',
    resource: 'tolls paid by travellers',
    founder: 'ferryman Osric',
    year: 1350,
    sense: 'clanking chains',
    danger: 'spring floods snapping the chain',
  },
  {
    name: 'Halvenreach',
    kind: 'observatory',
    place: 'a dark-sky plateau',
    feature: 'a copper dome that rotates on cannonballs',
    resource: 'star catalogues',
    founder: 'astronomer Peregrine Vosk',
    year: 1874,
    sense: 'the grinding of the rotating dome',
    danger: 'lightning strikes on the dome',
  },
  {
    name: 'Saltmarrow',
    kind: 'salt works',
    place: 'tidal flats',
    feature: 'shallow evaporation pans',
    resource: 'sea salt',
    founder: 'the abbey of St. Brine',
    year: 1104,
    sense: 'white crystals glittering in the sun',
    danger: 'storm surges ruining the pans',
  },
  {
    name: 'Dunmere',
    kind: 'lake village',
    place: 'the shore of a deep cold lake',
    feature: 'houses built on wooden piles',
    resource: 'freshwater eels',
    founder: 'lake dwellers of the bronze age',
    year: -1200,
    sense: 'lapping water under the floors',
    danger: 'rising lake levels',
  },
  {
    name: 'Ironhollow',
    kind: 'foundry',
    place: 'a forested gorge',
    feature: 'a water wheel powering giant bellows',
    resource: 'cast iron cannons',
    founder: 'ironmaster Tobias Grell',
    year: 1712,
    sense: 'sparks and hammering',
    danger: 'molten metal spills',
  },
  {
    name: 'Fennick Abbey',
    kind: 'ruined abbey',
    place: 'a quiet meadow',
    feature: 'a roofless nave with tall arches',
    resource: 'herb gardens tended by monks',
    founder: 'Abbot Cuthred',
    year: 1132,
    sense: 'birdsong in the empty cloister',
    danger: 'collapsing masonry',
  },
  {
    name: 'Sorrel Bay',
    kind: 'whaling port',
    place: 'a sheltered cove',
    feature: 'arches made of whale jawbones',
    resource: 'whale oil for lamps',
    founder: 'Captain Abel Sorrel',
    year: 1790,
    sense: 'the reek of rendering vats',
    danger: 'ships lost in pack ice',
  },
  {
    name: 'Pyrewick',
    kind: 'candle-making village',
    place: 'beside a beeswax forest',
    feature: 'a candle that has burned for a century',
    resource: 'beeswax candles',
    founder: 'chandler Morwen Pyre',
    year: 1605,
    sense: 'the warm smell of honey and wax',
    danger: 'bee swarms in early summer',
  },
  {
    name: 'Craglin',
    kind: 'quarry',
    place: 'a granite hillside',
    feature: 'a cable railway carrying stone blocks',
    resource: 'granite paving stones',
    founder: 'the Craglin Stone Company',
    year: 1866,
    sense: 'blasting echoes across the hills',
    danger: 'runaway wagons on the incline',
  },
  {
    name: 'Elsinwold',
    kind: 'royal forest',
    place: 'ancient oak woodland',
    feature: 'a hunting lodge with carved antlers',
    resource: 'timber for shipbuilding',
    founder: 'King Aldric',
    year: 1066,
    sense: 'deer calling in autumn',
    danger: 'poachers and wildfires',
  },
  {
    name: 'Tamsk',
    kind: 'railway junction',
    place: 'the open steppe',
    feature: 'a roundhouse for forty locomotives',
    resource: 'grain shipments',
    founder: 'the Imperial Railway Board',
    year: 1891,
    sense: 'whistles and shunting engines',
    danger: 'blizzards burying the tracks',
  },
  {
    name: 'Wyndle',
    kind: 'windmill hamlet',
    place: 'a flat windy plain',
    feature: 'seven windmills in a row',
    resource: 'ground flour',
    founder: 'millwright Jacoba Wyn',
    year: 1588,
    sense: 'sails creaking in the wind',
    danger: 'storms tearing off the sails',
  },
  {
    name: 'Orlanth Spa',
    kind: 'thermal spa',
    place: 'a volcanic valley',
    feature: 'steaming pools of mineral water',
    resource: 'healing baths for visitors',
    founder: 'physician Helena Orlanth',
    year: 1798,
    sense: 'the odour of sulphur',
    danger: 'scalding geyser bursts',
  },
  {
    name: 'Brindlecourt',
    kind: 'tea plantation',
    place: 'misty highland terraces',
    feature: "pickers' paths cut into the slopes",
    resource: 'black tea leaves',
    founder: 'planter Edwin Brindle',
    year: 1852,
    sense: 'mist drifting over green rows',
    danger: 'landslides after monsoon rain',
  },
  {
    name: 'Mossgarth',
    kind: 'peat bog',
    place: 'an upland moor',
    feature: 'a preserved wooden trackway',
    resource: 'sphagnum moss for dressings',
    founder: 'no one; it formed naturally',
    year: -5000,
    sense: 'squelching ground underfoot',
    danger: 'walkers sinking in soft mire',
  },
  {
    name: 'Calder Reach',
    kind: 'hydroelectric dam',
    place: 'a steep mountain gorge',
    feature: 'a curved concrete wall',
    resource: 'electricity for the region',
    founder: 'engineer Rosa Calder',
    year: 1936,
    sense: 'the thunder of the spillway',
    danger: 'cracks in the concrete',
  },
  {
    name: 'Vintry Row',
    kind: 'street of wine merchants',
    place: 'the old river port',
    feature: 'vaulted cellars under every shop',
    resource: 'imported claret',
    founder: 'the vintners company',
    year: 1420,
    sense: 'barrels rolling over cobbles',
    danger: 'cellar flooding at high tide',
  },
  {
    name: 'Skarn Hollow',
    kind: 'silver mine',
    place: 'a remote mountain basin',
    feature: 'a tunnel lined with mirrors of polished ore',
    resource: 'silver ingots',
    founder: 'prospector Elias Skarn',
    year: 1859,
    sense: 'dripping water in dark shafts',
    danger: 'tunnel collapses',
  },
  {
    name: 'Greywater',
    kind: 'paper mill',
    place: 'a fast stream',
    feature: 'vats of pulped rags',
    resource: 'fine writing paper',
    founder: 'papermaker Ottilie Grey',
    year: 1690,
    sense: 'the slap of wet sheets on felt',
    danger: 'the stream drying up in droughts',
  },
  {
    name: "Hobb's Landing",
    kind: 'river trading post',
    place: 'the edge of the northern forests',
    feature: 'a stockade of sharpened logs',
    resource: 'beaver pelts',
    founder: 'trader Nathaniel Hobb',
    year: 1734,
    sense: 'canoes scraping on gravel',
    danger: 'the river freezing early',
  },
  {
    name: 'Amberlea',
    kind: 'orchard village',
    place: 'a gentle valley',
    feature: 'an apple tree said to be four hundred years old',
    resource: 'cider',
    founder: 'the Amberlea growers',
    year: 1612,
    sense: 'the sweet smell of apple blossom',
    danger: 'codling moth infestations',
  },
  {
    name: 'Rookspire',
    kind: 'cathedral town',
    place: 'a low hill',
    feature: 'a leaning spire',
    resource: 'pilgrim donations',
    founder: 'Bishop Godwin',
    year: 1220,
    sense: 'rooks cawing around the spire',
    danger: 'the spire leaning further each decade',
  },
  {
    name: 'Nethercoil',
    kind: 'clockwork workshop',
    place: 'a narrow city alley',
    feature: 'an automaton that writes letters',
    resource: 'pocket watches',
    founder: 'clockmaker Ada Nether',
    year: 1784,
    sense: 'hundreds of clocks ticking',
    danger: 'fine brass shavings in the lungs',
  },
  {
    name: 'Sable Crossing',
    kind: 'border checkpoint',
    place: 'a high mountain pass',
    feature: 'a stone customs house',
    resource: 'duties on salt and wool',
    founder: 'the Duchy of Sable',
    year: 1515,
    sense: 'mule bells on the pass',
    danger: 'avalanches closing the pass',
  },
  {
    name: 'Lanternmoor',
    kind: 'lantern festival ground',
    place: 'a wide moorland',
    feature: 'ten thousand paper lanterns released at once',
    resource: 'festival visitors',
    founder: 'the moorland parishes',
    year: 1702,
    sense: 'glowing lights drifting into the sky',
    danger: 'heather fires from fallen lanterns',
  },
  {
    name: 'Tidesend',
    kind: 'shipyard',
    place: 'a deep estuary',
    feature: 'a dry dock cut from bedrock',
    resource: 'oak-hulled sailing ships',
    founder: 'shipwright Bram Tide',
    year: 1675,
    sense: 'adzes and caulking mallets',
    danger: 'hulls toppling from the slipway',
  },
  {
    name: 'Cinderfall',
    kind: 'volcanic island',
    place: 'the middle of a warm ocean',
    feature: 'black sand beaches',
    resource: 'sulphur mining',
    founder: 'no one; it rose from the sea',
    year: 1783,
    sense: 'steam rising from cracks',
    danger: 'eruptions and toxic gas',
  },
  {
    name: 'Quillhaven',
    kind: 'printing town',
    place: 'a university river city',
    feature: 'a press that printed the first local almanac',
    resource: 'books and pamphlets',
    founder: 'printer Lucan Quill',
    year: 1479,
    sense: 'the smell of ink and damp paper',
    danger: 'censors seizing pamphlets',
  },
];

export interface Passage {
  id: string;
  text: string;
}

export function passages(): Passage[] {
  const out: Passage[] = [];
  for (const e of ENTITIES) {
    const slug = e.name.toLowerCase().replace(/[^a-z]+/g, '-');
    const when = e.year < 0 ? `around ${-e.year} BC` : `in ${e.year}`;
    out.push({
      id: `${slug}-about`,
      text: `${e.name} is a ${e.kind} in ${e.place}. It is best known for ${e.feature}.`,
    });
    out.push({
      id: `${slug}-history`,
      text:
        `The history of ${e.name} begins ${when}, when it was established by ${e.founder}. Records from ` +
        `that time describe the ${e.kind} as small and poor.`,
    });
    out.push({
      id: `${slug}-economy`,
      text:
        `For most of its existence ${e.name} has lived from ${e.resource}. Local families still depend on ` +
        `it today.`,
    });
    out.push({
      id: `${slug}-visit`,
      text: `Travellers arriving at ${e.name} remember ${e.sense} long after they leave.`,
    });
    out.push({
      id: `${slug}-risk`,
      text: `The greatest threat to ${e.name} has always been ${e.danger}. Guides warn every newcomer about it.`,
    });
  }
  const distractors = [
    'Many villages depend on a single trade, which makes them fragile when prices fall.',
    'Historians warn that founding dates in old charters are often invented later.',
    'A good guidebook lists the dangers of a place as well as its attractions.',
    'Industrial towns of the nineteenth century grew quickly and were often unhealthy.',
    'Coastal settlements share a dependence on the sea and a fear of storms.',
    'Religious houses were centres of farming, learning and hospitality in the middle ages.',
    'The smell of a place is what visitors remember most vividly, according to surveys.',
    'Mountain communities are cut off for months when snow closes the roads.',
    'Festivals bring money to rural areas but also crowds and litter.',
    'Engineers must balance the cost of a structure against the risk of its failure.',
    'Traders followed rivers into the interior long before roads were built.',
    'Craft workshops passed their secrets from master to apprentice for generations.',
  ];
  distractors.forEach((text, i) => out.push({ id: `distractor-${i}`, text }));
  return out;
}

const s = (name: string) => name.toLowerCase().replace(/[^a-z]+/g, '-');

/** Hand-written queries with graded judgements (passage id → grade). */
export const QUERIES: Array<{ q: string; style: 'keyword' | 'meaning'; rel: Record<string, number> }> = [
  // keyword style: names and exact words
  {
    q: 'Velmora oyster harvesting',
    style: 'keyword',
    rel: { [`${s('Velmora')}-economy`]: 2, [`${s('Velmora')}-about`]: 1 },
  },
  { q: 'Quorrith bell melted coins', style: 'keyword', rel: { [`${s('Quorrith')}-about`]: 2 } },
  { q: 'Brassfen drawbridges', style: 'keyword', rel: { [`${s('Brassfen')}-about`]: 2 } },
  { q: 'Kelvane glass beads', style: 'keyword', rel: { [`${s('Kelvane')}-economy`]: 2, [`${s('Kelvane')}-about`]: 1 } },
  { q: 'Pellucid Station crevasses runway', style: 'keyword', rel: { [`${s('Pellucid Station')}-risk`]: 2 } },
  { q: 'Marrowgate wool trading', style: 'keyword', rel: { [`${s('Marrowgate')}-economy`]: 2 } },
  { q: 'Zephyrine dirigibles mooring towers', style: 'keyword', rel: { [`${s('Zephyrine')}-about`]: 2 } },
  { q: 'Gundersholm prisms lens', style: 'keyword', rel: { [`${s('Gundersholm')}-about`]: 2 } },
  { q: 'Ashcombe firedamp explosions', style: 'keyword', rel: { [`${s('Ashcombe')}-risk`]: 2 } },
  { q: 'Lirienne chalk cellars', style: 'keyword', rel: { [`${s('Lirienne')}-about`]: 2 } },
  { q: 'Halvenreach copper dome cannonballs', style: 'keyword', rel: { [`${s('Halvenreach')}-about`]: 2 } },
  {
    q: 'Saltmarrow evaporation pans',
    style: 'keyword',
    rel: { [`${s('Saltmarrow')}-about`]: 2, [`${s('Saltmarrow')}-risk`]: 1 },
  },
  { q: 'Ironhollow Tobias Grell', style: 'keyword', rel: { [`${s('Ironhollow')}-history`]: 2 } },
  { q: 'Sorrel Bay whale jawbones', style: 'keyword', rel: { [`${s('Sorrel Bay')}-about`]: 2 } },
  {
    q: 'Craglin cable railway granite',
    style: 'keyword',
    rel: { [`${s('Craglin')}-about`]: 2, [`${s('Craglin')}-economy`]: 1 },
  },
  { q: 'Tamsk roundhouse locomotives', style: 'keyword', rel: { [`${s('Tamsk')}-about`]: 2 } },
  { q: 'Orlanth Spa sulphur', style: 'keyword', rel: { [`${s('Orlanth Spa')}-visit`]: 2 } },
  { q: 'Calder Reach spillway', style: 'keyword', rel: { [`${s('Calder Reach')}-visit`]: 2 } },
  { q: 'Skarn Hollow silver ingots', style: 'keyword', rel: { [`${s('Skarn Hollow')}-economy`]: 2 } },
  { q: "Hobb's Landing beaver pelts", style: 'keyword', rel: { [`${s("Hobb's Landing")}-economy`]: 2 } },
  {
    q: 'Rookspire leaning spire',
    style: 'keyword',
    rel: { [`${s('Rookspire')}-about`]: 2, [`${s('Rookspire')}-risk`]: 1, [`${s('Rookspire')}-visit`]: 1 },
  },
  { q: 'Nethercoil automaton letters', style: 'keyword', rel: { [`${s('Nethercoil')}-about`]: 2 } },
  { q: 'Quillhaven almanac press', style: 'keyword', rel: { [`${s('Quillhaven')}-about`]: 2 } },
  { q: 'Tidesend dry dock bedrock', style: 'keyword', rel: { [`${s('Tidesend')}-about`]: 2 } },
  // meaning style: paraphrases without the passage's words
  {
    q: 'a seaside settlement whose people make a living gathering shellfish',
    style: 'meaning',
    rel: { [`${s('Velmora')}-economy`]: 2, [`${s('Velmora')}-about`]: 1 },
  },
  {
    q: 'which place is endangered by huge waves crashing onto the tower balcony',
    style: 'meaning',
    rel: { [`${s('Gundersholm')}-risk`]: 2 },
  },
  {
    q: 'a religious community on a mountain that sells dairy products to visitors',
    style: 'meaning',
    rel: { [`${s('Quorrith')}-economy`]: 2, [`${s('Quorrith')}-about`]: 1 },
  },
  {
    q: 'where do boats crash into each other because visibility is poor',
    style: 'meaning',
    rel: { [`${s('Brassfen')}-risk`]: 2 },
  },
  {
    q: 'a scientific outpost in Antarctica studying frozen cores',
    style: 'meaning',
    rel: { [`${s('Pellucid Station')}-economy`]: 2, [`${s('Pellucid Station')}-about`]: 1 },
  },
  {
    q: 'a town of miners where black dust settles on the houses',
    style: 'meaning',
    rel: { [`${s('Ashcombe')}-visit`]: 2, [`${s('Ashcombe')}-about`]: 1 },
  },
  { q: 'a wine estate hurt by cold nights in spring', style: 'meaning', rel: { [`${s('Lirienne')}-risk`]: 2 } },
  {
    q: 'a telescope building whose roof gets hit by electrical storms',
    style: 'meaning',
    rel: { [`${s('Halvenreach')}-risk`]: 2 },
  },
  {
    q: 'an ancient settlement on stilts by a freshwater lake where people caught fish',
    style: 'meaning',
    rel: { [`${s('Dunmere')}-about`]: 2, [`${s('Dunmere')}-economy`]: 2 },
  },
  {
    q: 'a factory that made artillery using river power',
    style: 'meaning',
    rel: { [`${s('Ironhollow')}-about`]: 2, [`${s('Ironhollow')}-economy`]: 2 },
  },
  {
    q: 'a crumbling church ruin in a field where birds sing',
    style: 'meaning',
    rel: { [`${s('Fennick Abbey')}-visit`]: 2, [`${s('Fennick Abbey')}-about`]: 1, [`${s('Fennick Abbey')}-risk`]: 1 },
  },
  {
    q: 'a harbour that boiled down sea mammals for lamp fuel',
    style: 'meaning',
    rel: { [`${s('Sorrel Bay')}-economy`]: 2, [`${s('Sorrel Bay')}-visit`]: 1 },
  },
  {
    q: 'a village that smells of honey where people make lights from bee products',
    style: 'meaning',
    rel: { [`${s('Pyrewick')}-visit`]: 2, [`${s('Pyrewick')}-economy`]: 2 },
  },
  {
    q: 'a woodland reserved for the king where trees were cut for the navy',
    style: 'meaning',
    rel: { [`${s('Elsinwold')}-economy`]: 2, [`${s('Elsinwold')}-about`]: 1 },
  },
  { q: 'snow storms covering the train lines on the grassland', style: 'meaning', rel: { [`${s('Tamsk')}-risk`]: 2 } },
  {
    q: 'a hamlet that mills grain using wind power',
    style: 'meaning',
    rel: { [`${s('Wyndle')}-economy`]: 2, [`${s('Wyndle')}-about`]: 2 },
  },
  {
    q: 'hot springs where people bathe to cure illness',
    style: 'meaning',
    rel: { [`${s('Orlanth Spa')}-economy`]: 2, [`${s('Orlanth Spa')}-about`]: 2 },
  },
  {
    q: 'a hillside farm producing a popular hot drink, threatened by mudslides',
    style: 'meaning',
    rel: { [`${s('Brindlecourt')}-risk`]: 2, [`${s('Brindlecourt')}-economy`]: 2 },
  },
  {
    q: 'a power plant wall that might fracture',
    style: 'meaning',
    rel: { [`${s('Calder Reach')}-risk`]: 2, [`${s('Calder Reach')}-about`]: 1 },
  },
  {
    q: 'a fur trading fort in the north woods',
    style: 'meaning',
    rel: { [`${s("Hobb's Landing")}-about`]: 2, [`${s("Hobb's Landing")}-economy`]: 2 },
  },
  {
    q: 'an apple growing village known for an alcoholic drink',
    style: 'meaning',
    rel: { [`${s('Amberlea')}-economy`]: 2, [`${s('Amberlea')}-about`]: 1 },
  },
  {
    q: 'a sky full of floating paper lights at a yearly celebration',
    style: 'meaning',
    rel: { [`${s('Lanternmoor')}-visit`]: 2, [`${s('Lanternmoor')}-about`]: 2 },
  },
  { q: 'an island made by a volcano with dark beaches', style: 'meaning', rel: { [`${s('Cinderfall')}-about`]: 2 } },
  {
    q: 'a workshop full of ticking timepieces',
    style: 'meaning',
    rel: { [`${s('Nethercoil')}-visit`]: 2, [`${s('Nethercoil')}-economy`]: 1 },
  },
];

/**
 * nDCG@10 with exponential gain (2^grade − 1) over this set's graded judgments (the project's own figures; the BEIR
 * harness in tests/eval/metrics.ts uses linear gain, as trec_eval does).
 */
export function ndcgAt10(ranked: string[], rel: Record<string, number>): number {
  const dcg = ranked.slice(0, 10).reduce((s, id, i) => s + (2 ** (rel[id] ?? 0) - 1) / Math.log2(i + 2), 0);
  const ideal = Object.values(rel)
    .sort((a, b) => b - a)
    .slice(0, 10)
    .reduce((s, g, i) => s + (2 ** g - 1) / Math.log2(i + 2), 0);
  return ideal ? dcg / ideal : 0;
}
