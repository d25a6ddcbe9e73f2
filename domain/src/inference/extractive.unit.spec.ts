import { describe, expect, it } from 'vitest';
import { chooseSentences, sentencesOf, terms } from './extractive';

describe("the built-in model's sentence choice", () => {
  const sources = [
    {
      label: '1',
      text: 'The committee met on Tuesday. Passwords must be changed every ninety days. Lunch was served afterwards.',
      score: 0.4,
    },
    {
      label: '2',
      text: 'Backups of the file server run every night at midnight. The office closes at six.',
      score: 0.9,
    },
  ];

  it(
    'splits sentences at ICU boundaries (not after an abbreviation; a line break ends one) and drops ' +
      'fragments of fewer than three words',
    () => {
      expect(
        sentencesOf('Dr. Smith arrived at noon. He left. It rained all day long!\n\nA heading\nNext line here'),
      ).toEqual(['Dr. Smith arrived at noon.', 'It rained all day long!', 'Next line here']);
    },
  );

  it('stems plural and tense variants and drops stop words', () => {
    expect(terms('How often are the passwords changed?')).toEqual(['often', 'password', 'chang']);
    expect(terms('changing password')).toEqual(['chang', 'password']);
  });

  it('answers with the sentence that shares the rare words of the question, whichever source it is in', async () => {
    const c = await chooseSentences('How often do passwords have to be changed?', sources);
    expect(c.sentences[0]).toMatchObject({ text: 'Passwords must be changed every ninety days.', source: 0 });
    expect(c.candidates).toBe(5);
  });

  it('chooses nothing when no sentence shares a meaningful word', async () => {
    expect((await chooseSentences('What colour is the zebra?', sources)).sentences).toEqual([]);
    expect((await chooseSentences('anything', [])).sentences).toEqual([]);
  });

  it('a similarity, when given, can lift a sentence the keywords rank lower', async () => {
    const q = 'When do backups of the file server run, and when does the office close?';
    const plain = await chooseSentences(q, sources, { maxSentences: 1 });
    const lifted = await chooseSentences(q, sources, {
      maxSentences: 1,
      rerank: 8,
      similarity: async (_q, ss) => ss.map((s) => (s.startsWith('The office closes') ? 1 : 0)),
    });
    expect(plain.sentences[0].text).toMatch(/^Backups/);
    expect(lifted.sentences[0].text).toBe('The office closes at six.');
  });
});
