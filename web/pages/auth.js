// Sign in (`/signin`) and sign up (`/signup`): one form each, then back to where the visitor came from.
import { api, explain } from '../lib/api.js';
import { alertBox, h, ME, say, setTitle, show } from '../lib/dom.js';
import { field } from '../lib/forms.js';
import { limits } from '../lib/limits.js';
import { localPath } from '../lib/local-path.js';

/** Where to go back to after signing in: `next` when it is a path of this origin (../lib/local-path.js), else `/`. */
const nextPath = () => localPath(new URLSearchParams(location.search).get('next') ?? '/', location.origin);

/** @param {string} page `signin` or `signup` */
export function render(page) {
  const register = page === 'signup';
  setTitle(register ? 'Sign up' : 'Sign in');
  if (ME) {
    show(
      h('h1', {}, 'You are signed in'),
      h('p', {}, 'Signed in as ', ME.username, '. ', h('a', { href: '/' }, 'Go to the feed')),
    );
    return;
  }
  const notice = alertBox();
  const form = h(
    'form',
    { class: 'auth', novalidate: true },
    register
      ? [
          field('username', 'Username', {
            autocomplete: 'username',
            required: true,
            pattern: limits.usernamePattern,
            'aria-describedby': 'username-hint',
          }),
          h('p', { class: 'hint', id: 'username-hint' }, '3–32 letters, digits or _'),
          field('email', 'Email', { type: 'email', autocomplete: 'email', required: true }),
        ]
      : field('login', 'Email or username', { autocomplete: 'username', required: true }),
    field('password', 'Password', {
      type: 'password',
      autocomplete: register ? 'new-password' : 'current-password',
      required: true,
      minlength: limits.minPassword,
    }),
    h('button', { type: 'submit' }, register ? 'Create account' : 'Sign in'),
    notice,
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    /** @param {string} name */
    const v = (name) => /** @type {HTMLInputElement} */ (form.elements.namedItem(name)).value;
    let payload;
    if (register) {
      payload = {
        action: 'register',
        username: v('username').trim(),
        email: v('email').trim(),
        password: v('password'),
      };
    } else {
      const login = v('login').trim();
      payload = { action: 'login', [login.includes('@') ? 'email' : 'username']: login, password: v('password') };
    }
    const button = /** @type {HTMLButtonElement} */ (form.querySelector('button'));
    button.disabled = true;
    const r = await api('POST', '/api/auth', payload);
    button.disabled = false;
    if (r.ok) return location.assign(nextPath());
    say(notice, r.status === 401 ? 'Wrong email, username or password.' : explain(r));
  });
  show(
    h('h1', {}, register ? 'Create an account' : 'Sign in'),
    form,
    h(
      'p',
      {},
      register
        ? ['Have an account? ', h('a', { href: '/signin' }, 'Sign in')]
        : ['New here? ', h('a', { href: '/signup' }, 'Create an account')],
    ),
  );
  form.querySelector('input')?.focus();
}
