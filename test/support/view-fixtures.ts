/** Data for the pages' views (src/gateway/views/) in their tests: an upload as the API lists it, hostile text. */
import type { Upload } from '../../src/gateway/views/card-view.ts';

/** Text that would be markup, a comment's end and a CDATA end if it were not escaped. */
export const HOSTILE = `<b id="injected">bold</b> & "quoted" 'single' <!-- --> ]]>`;

/** An image upload: a URL-hostile id, a name with a space, a thumbnail URL with `&` and `"`, a very wide image. */
export const VIEW_UPLOAD: Upload = {
  id: 'a/b?c',
  user_id: 'u1',
  username: 'ada lovelace',
  upload_type: 'image',
  description: null,
  original_name: null,
  external_url: null,
  is_private: false,
  upvotes: 3,
  downvote_count: 0,
  created_at: '2026-11-27T11:00:00.000Z',
  tags: [],
  image: { url: '/i', thumbnail_url: '/api/image/x?size=thumb&y="1"', width: 4000, height: 10, thumbhash: null },
};
