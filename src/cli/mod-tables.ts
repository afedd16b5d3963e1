/**
 * Tables for `pixvote mod queue`, `pixvote mod jobs` and `pixvote mod modlog`: pure functions from the server's
 * JSON to text.
 */

export interface QueueItem {
  kind?: 'upload';
  upload: {
    id: string;
    username?: string | null;
    user_id?: string;
    upload_type?: string;
    created_at: string;
    moderation?: 'visible' | 'held' | 'removed';
  };
  reports: {
    count: number;
    reasons: Record<string, number>;
    notes?: unknown[];
    first_at: string | null;
    last_at: string | null;
  };
  person_flag: boolean;
  human_score: number | null;
  /** The detector's best boxes, fractions of the image (absent from servers before issue 32). */
  human_boxes?: PersonBoxView[] | null;
}

export interface PersonBoxView {
  x: number;
  y: number;
  width: number;
  height: number;
  score: number;
}

/** A `vote_ring` item of the queue (API.md Moderation, "Vote rings"): one row, its id acted on by the API. */
export interface VoteRingQueueItem {
  kind: 'vote_ring';
  id: string;
  accounts: unknown[];
  evidence: { target: { type: string; id: string }; direction: string; score: number };
  created_at: string;
}

export interface ModlogEntry {
  id: string;
  at: string;
  action: string;
  /** id null: an upload the public view does not name (API.md Modlog). */
  target: { type: string; id: string | null };
  reason: string | null;
  moderator?: { id: string; username: string } | null;
}

/** Rows padded to their columns' widths; the last column is not padded. */
export function renderTable(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ') + '\n').join('');
}

/** 45s, 12m, 3h, 5d, 7w: how long ago, in its largest whole unit. */
export function formatAge(fromIso: string | null, now: number): string {
  if (!fromIso) return '-';
  const s = Math.max(0, Math.floor((now - Date.parse(fromIso)) / 1000));
  if (Number.isNaN(s)) return '-';
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h`;
  if (s < 86_400 * 14) return `${Math.floor(s / 86_400)}d`;
  return `${Math.floor(s / (86_400 * 7))}w`;
}

/** The most given reasons first (ties by name), at most `max`, with their counts: `spam×3, sexual`. */
export function topReasons(reasons: Record<string, number>, max = 3): string {
  const sorted = Object.entries(reasons)
    .filter(([, n]) => n > 0)
    .sort(([a, x], [b, y]) => y - x || a.localeCompare(b));
  const shown = sorted.slice(0, max).map(([r, n]) => (n > 1 ? `${r}×${n}` : r));
  if (sorted.length > max) shown.push(`+${sorted.length - max}`);
  return shown.join(', ') || '-';
}

/** `yes 0.93` when flagged, else the score, else `-` (detection off). */
export function personCell(flag: boolean, score: number | null): string {
  const s = score === null ? null : score.toFixed(2);
  return flag ? `yes${s ? ` ${s}` : ''}` : (s ?? '-');
}

const pct = (v: number) => String(Math.round(v * 100));

/**
 * The person detector's boxes as text, best first: `0.41 at 12,30 size 20x45` (left, top, width, height in % of the
 * image).
 */
export function personBoxes(boxes: readonly PersonBoxView[]): string {
  return boxes
    .map((b) => `${b.score.toFixed(2)} at ${pct(b.x)},${pct(b.y)} size ${pct(b.width)}x${pct(b.height)}`)
    .join('; ');
}

/**
 * The queue in the server's order (held first, then most reported, then oldest); then, for uploads person detection
 * queued, where the detector saw people (its boxes in % of the image).
 */
export function renderQueue(items: Array<QueueItem | VoteRingQueueItem>, now: number): string {
  const rows = [
    ['UPLOAD', 'STATE', 'REPORTS', 'REASONS', 'PERSON', 'UPLOADER', 'AGE'],
    ...items.map((it) =>
      it.kind === 'vote_ring'
        ? [
            it.id,
            'vote_ring',
            `${it.accounts.length} accounts`,
            `${it.evidence.direction} ${it.evidence.target.type} ${it.evidence.target.id}`,
            '-',
            '-',
            formatAge(it.created_at, now),
          ]
        : [
            it.upload.id,
            it.upload.moderation ?? 'visible',
            String(it.reports.count),
            topReasons(it.reports.reasons),
            personCell(it.person_flag, it.human_score),
            it.upload.username ?? it.upload.user_id ?? '-',
            formatAge(it.reports.first_at ?? it.upload.created_at, now),
          ],
    ),
  ];
  const boxed = items.flatMap((it) => (it.kind !== 'vote_ring' && it.human_boxes?.length ? [it] : []));
  const notes = boxed.length
    ? '\nPerson boxes (score at left,top size width x height, in % of the image):\n' +
      boxed.map((it) => `  ${it.upload.id}: ${personBoxes(it.human_boxes!)}\n`).join('')
    : '';
  return renderTable(rows) + notes;
}

const oneLine = (s: string | null, max: number) => {
  const t = (s ?? '').replace(/\s+/g, ' ').trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
};

export function renderModlog(entries: ModlogEntry[]): string {
  const withModerator = entries.some((e) => e.moderator !== undefined);
  const rows = [
    ['AT', 'ACTION', 'TARGET', ...(withModerator ? ['MODERATOR'] : []), 'REASON'],
    ...entries.map((e) => [
      e.at.replace(/\.\d{3}Z$/, 'Z'),
      e.action,
      `${e.target.type} ${e.target.id ?? '(not public)'}`,
      ...(withModerator ? [e.moderator ? e.moderator.username : '(automatic)'] : []),
      oneLine(e.reason, 80) || '-',
    ]),
  ];
  return renderTable(rows);
}

/** A durable moderation job (`GET /api/admin/jobs`): a ban's removal of uploads, or a blocklist hold. */
export interface ModJob {
  id: string;
  kind: string;
  status: string;
  progress: { done: number; total: number };
  target: { type: string; id: string | null };
  error: string | null;
  created_at: string;
  updated_at: string;
}

export function renderJobs(jobs: ModJob[], now: number): string {
  const rows = [
    ['JOB', 'KIND', 'STATUS', 'PROGRESS', 'TARGET', 'UPDATED', 'ERROR'],
    ...jobs.map((j) => [
      j.id,
      j.kind,
      j.status,
      `${j.progress.done}/${j.progress.total}`,
      j.target.id ? `${j.target.type} ${j.target.id}` : j.target.type,
      formatAge(j.updated_at, now),
      oneLine(j.error, 60) || '-',
    ]),
  ];
  return renderTable(rows);
}
