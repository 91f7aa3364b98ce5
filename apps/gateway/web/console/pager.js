// A list paged as the API pages it: a cursor forward, the cursors seen to go back, and a status filter that
// starts again from the first page (a cursor is bound to its filters). `onChange` reads the list again.
export function pager({ prev, next, filter, onChange }) {
  /** Cursors of the pages before the current one (the first page has none). */
  const previous = [];
  const state = {
    /** The current page's cursor (undefined: the first page). */
    cursor: undefined,
    status: filter.value,
    nextCursor: null,
    /** How many items the pages before this one hold. */
    offset: (pageSize) => previous.length * pageSize,
    /** After a page was read: its `metadata.nextCursor` (the spec: null, empty or missing ends the paging). */
    loaded(metadata) {
      state.nextCursor = metadata.nextCursor || null;
      prev.disabled = previous.length === 0;
      next.disabled = state.nextCursor === null;
    },
  };
  prev.addEventListener('click', () => {
    state.cursor = previous.pop();
    onChange();
  });
  next.addEventListener('click', () => {
    if (state.nextCursor === null) return;
    previous.push(state.cursor);
    state.cursor = state.nextCursor;
    onChange();
  });
  filter.addEventListener('change', () => {
    state.status = filter.value;
    previous.length = 0;
    state.cursor = undefined;
    onChange();
  });
  return state;
}
