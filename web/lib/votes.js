// Voting, as the upload page and the cards do it: two toggle buttons showing the visitor's own vote
// (aria-pressed); pressing the pressed one retracts it (POST /api/vote).
import { api, explain } from './api.js';

/**
 * Makes a pair of vote buttons work: each press sends the vote, then the buttons and counts show the answer.
 * The buttons may be the module's own or the server's markup (the feed's first page): nothing is rebuilt.
 * @param {string} uploadId
 * @typedef {{ up: Element, down: Element, nUp?: Element | null, nDown?: Element | null }} VoteParts
 * @typedef {{ upvotes: number, downvote_count: number, vote: string | null }} VoteCounts
 * @param {VoteParts & { onError: (text: string) => void, onVoted?: (counts: VoteCounts) => void }} parts
 */
export function bindVotes(uploadId, { up, down, nUp, nDown, onError, onVoted }) {
  let busy = false;
  /**
   * @param {'fucks' | 'does_not_fuck'} value
   * @param {Element} button
   */
  const vote = async (value, button) => {
    if (busy) return;
    busy = true;
    const pressed = button.getAttribute('aria-pressed') === 'true';
    const r = await api('POST', '/api/vote', { uploadId, vote: pressed ? 'none' : value });
    busy = false;
    if (!r.ok) return onError(explain(r));
    if (nUp) nUp.textContent = String(r.data.upvotes);
    if (nDown) nDown.textContent = String(r.data.downvote_count);
    up.setAttribute('aria-pressed', String(r.data.vote === 'fucks'));
    down.setAttribute('aria-pressed', String(r.data.vote === 'does_not_fuck'));
    onVoted?.(r.data);
  };
  up.addEventListener('click', () => void vote('fucks', up));
  down.addEventListener('click', () => void vote('does_not_fuck', down));
}
