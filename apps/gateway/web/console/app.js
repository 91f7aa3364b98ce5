// The console (GET /console): sign-in, then the accounts, shipments, a shipment's page and the devices of
// an account, each a view of the public API. Routes live in the address's fragment (#/a/{accountId}/...),
// so the gateway serves one page; the state of a view lives in memory and ends with it.
import { ApiError, api, currentSession, signIn, signOut, withQuery } from './api.js';
import { EventFeed } from './feed.js';
import { el } from './format.js';
import { devicesView } from './devices.js';
import { shipmentListView, shipmentView } from './shipments.js';

const $ = (id) => document.getElementById(id);
const signInForm = $('sign-in');

/** What the whole console shares: the accounts the token may use, the open account and its event feed. */
const state = { accounts: null, account: null, feed: null, view: null };
// For tests and curious people: the state, the current map and view.
window.trackingConsole = { state, map: undefined, view: undefined };

/** Writes may be offered only to these roles; a Viewer sees everything read-only. */
export function canWrite(account) {
  return account.role === 'Admin' || account.role === 'Operator';
}

export function showMessage(text) {
  $('message').textContent = text;
  $('message').hidden = !text;
}

/** Every error of a view ends here: 401 signs out, anything else is said in the banner. */
export function reportError(error) {
  if (error instanceof ApiError && error.status === 401) {
    endSession('Your session has ended: sign in again.');
    return;
  }
  showMessage(error instanceof ApiError ? `${error.message} (${error.code})` : `Something went wrong: ${error.message}`);
}

function endSession(message) {
  signOut();
  stopAccount();
  state.accounts = null;
  location.hash = '';
  route();
  showMessage(message);
}

function stopView() {
  state.view?.stop?.();
  state.view = null;
  window.trackingConsole.map = undefined;
  window.trackingConsole.view = undefined;
}

function stopAccount() {
  stopView();
  state.feed?.stop();
  state.feed = null;
  state.account = null;
}

/** The view area emptied of the previous view (the sign-in form stays in the document, hidden). */
function viewArea() {
  const view = $('view');
  for (const child of [...view.children]) if (child !== signInForm && child.tagName !== 'NOSCRIPT') child.remove();
  return view;
}

async function loadAccounts() {
  if (state.accounts) return state.accounts;
  const accounts = [];
  let cursor;
  do {
    const page = await api('GET', withQuery('/v1/accounts', { limit: 100, cursor }));
    accounts.push(...page.items);
    cursor = page.metadata.nextCursor;
  } while (cursor);
  state.accounts = accounts;
  return accounts;
}

/** Opens the account (its event feed starts) unless it is open already. */
function openAccount(account) {
  if (state.account?.id === account.id) return;
  stopAccount();
  state.account = account;
  state.feed = new EventFeed(account.id, reportError);
  state.feed.start();
  $('account-name').textContent = account.name;
  $('role').textContent = account.role;
  $('nav-shipments').href = `#/a/${account.id}`;
  $('nav-devices').href = `#/a/${account.id}/devices`;
}

function showSignIn() {
  stopAccount();
  viewArea();
  $('nav').hidden = true;
  signInForm.hidden = false;
  document.title = 'Sign in: Tracking console';
  $('tenant-id').focus();
}

async function route() {
  const session = currentSession();
  if (!session) return showSignIn();
  signInForm.hidden = true;
  $('nav').hidden = false;
  const parts = location.hash.replace(/^#\/?/, '').split('/').filter(Boolean);
  try {
    const accounts = await loadAccounts();
    if (parts[0] !== 'a') {
      // Straight into the account when there is only one to choose.
      if (parts[0] !== 'accounts' && accounts.length === 1) return void (location.hash = `#/a/${accounts[0].id}`);
      return show(accountsView(accounts));
    }
    const account = accounts.find((candidate) => candidate.id === parts[1]);
    if (!account) return show(notFound('This account is not one you can open.'));
    openAccount(account);
    const context = { account, feed: state.feed, reportError, canWrite: canWrite(account) };
    if (parts[2] === 'shipments' && parts[3]) return show(shipmentView(context, parts[3]));
    if (parts[2] === 'devices') return show(devicesView(context));
    return show(shipmentListView(context));
  } catch (error) {
    reportError(error);
  }
}

/** Replaces the current view with `view` ({element, title, start?, stop?}): start once it is in the document. */
function show(view) {
  stopView();
  state.view = view;
  window.trackingConsole.view = view;
  viewArea().append(view.element);
  document.title = `${view.title}: Tracking console`;
  view.start?.();
}

function accountsView(accounts) {
  stopAccount();
  $('account-name').textContent = '';
  $('role').textContent = '';
  const rows = accounts.map((account) =>
    el('tr', {}, el('td', {}, el('a', { href: `#/a/${account.id}` }, account.name)), el('td', {}, account.role), el('td', { class: 'id' }, account.id)),
  );
  const element = el(
    'section',
    { class: 'card', id: 'accounts' },
    el('h1', {}, 'Accounts'),
    accounts.length === 0
      ? el('p', {}, 'This application holds no role on any account.')
      : el('table', {}, el('thead', {}, el('tr', {}, el('th', {}, 'Account'), el('th', {}, 'Your role'), el('th', {}, 'ID'))), el('tbody', {}, rows)),
  );
  return { element, title: 'Accounts' };
}

function notFound(text) {
  return { element: el('section', { class: 'card' }, el('h1', {}, 'Not found'), el('p', {}, text), el('a', { href: '#/accounts' }, 'Accounts')), title: 'Not found' };
}

signInForm.addEventListener('submit', async (event) => {
  event.preventDefault();
  const secret = $('application-secret');
  const button = signInForm.querySelector('button');
  button.disabled = true;
  showMessage('');
  try {
    await signIn($('tenant-id').value.trim(), $('application-id').value.trim(), secret.value);
    // The secret is used once, for the token, and leaves the page at once.
    secret.value = '';
    state.accounts = null;
    await route();
  } catch (error) {
    secret.value = '';
    showMessage(
      error instanceof ApiError && error.status === 401
        ? 'These credentials are not valid: check the tenant ID, application ID and secret.'
        : error instanceof ApiError
          ? `${error.message} (${error.code})`
          : `Could not sign in: ${error.message}`,
    );
  } finally {
    button.disabled = false;
  }
});

$('sign-out').addEventListener('click', () => {
  signOut();
  stopAccount();
  state.accounts = null;
  showMessage('');
  history.replaceState(null, '', location.pathname);
  showSignIn();
});

window.addEventListener('hashchange', () => {
  showMessage('');
  route();
});
route();
