/**
 * Every page's `<meta name="description">` (issue 30: search results and link previews show it; Lighthouse's SEO
 * audit wants one on each page). An upload's page describes itself from its upload (src/gateway/upload-page.ts);
 * the feed names its sort and tag; the other pages say what they are for. The tag comes from the query string:
 * it is folded as the feed folds it, clipped, and escaped like every attribute value.
 */
import { MAX_TAG_LENGTH } from '../domain/tags.ts';
import { el } from './web-render.ts';

/** How each sort orders the feed, in words. */
const SORT_WORDS = new Map([
  ['new', { all: 'The newest images and links shared on pixvote', tagged: 'newest first' }],
  ['top', { all: 'The top-voted images and links on pixvote, the most up votes first', tagged: 'top-voted first' }],
  ['hot', { all: 'What is hot on pixvote: the images and links gaining votes fastest right now', tagged: 'hot first' }],
  [
    'best',
    { all: 'The best-rated images and links on pixvote, by their share of up votes', tagged: 'best-rated first' },
  ],
]);

/** The pages whose content is the same for everyone. */
const FIXED = new Map(
  Object.entries({
    new: 'Upload an image, from a file or a URL, or share a link on pixvote, where the community votes on it.',
    signin: 'Sign in to pixvote to upload images and links, vote on what others share and manage your API tokens.',
    signup: 'Create a pixvote account to upload images and links, vote on what the community shares and script it.',
    modlog: "pixvote's public moderation log: every upload the moderators held, removed or restored, and why.",
    profile: 'Your pixvote profile: your uploads, the private ones too, and the API tokens of your scripts.',
    moderation: "pixvote's moderation queue, reports and bans, for the site's moderators.",
  }),
);

/** The feed's description for its sort and tag (query values as the request gave them). */
export function feedDescription(sort: unknown, tag: unknown): string {
  const words = SORT_WORDS.get(typeof sort === 'string' ? sort : '') ?? SORT_WORDS.get('new')!;
  const slug = (typeof tag === 'string' ? tag : '').normalize('NFKC').trim().toLowerCase().replace(/\s+/g, '-');
  if (!slug) return `${words.all}. Everyone votes on every upload.`;
  const shown = [...slug].length > MAX_TAG_LENGTH ? `${[...slug].slice(0, MAX_TAG_LENGTH - 1).join('')}…` : slug;
  return `Images and links tagged “${shown}” on pixvote, ${words.tagged}. Everyone votes on every upload.`;
}

/**
 * The `<meta name="description">` of a page rendered without content of its own (an upload's page brings its
 * own head), or '' for a page with nothing to say.
 */
export function descriptionMeta(page: string, query: Record<string, unknown>): string {
  const content = page === 'feed' ? feedDescription(query.sort, query.tag) : FIXED.get(page);
  return content ? `${el('meta', { name: 'description', content })}\n` : '';
}
