// A client-side table: sort by any column (click a header; again to reverse), filter with
// a predicate, and show one page at a time so hundreds of rows stay quick.
import { el } from "./dom.js";

function compare(a, b) {
  if (a == null || b == null) return (a == null) - (b == null);
  return typeof a === "string" ? a.localeCompare(b) : a - b;
}

export class Grid {
  // columns: [{key, label, value(row), render(row), className}]
  constructor(table, pager, columns, pageSize) {
    Object.assign(this, { table, pager, columns, pageSize });
    this.rows = [];
    this.keep = () => true;
    this.sort = { key: null, direction: 1 };
    this.page = 0;
    this.onRender = () => {}; // told after each render, e.g. to put the view in the URL
    this.renderHeader();
  }

  renderHeader() {
    const headers = this.columns.map((column) =>
      el(
        "th",
        {
          className: `sortable ${column.className || ""}`,
          dataset: { key: column.key },
          onclick: () => this.sortBy(column.key),
        },
        column.label,
      ),
    );
    this.table.tHead.replaceChildren(el("tr", {}, headers));
  }

  setRows(rows) {
    this.rows = rows;
    this.render();
  }

  filter(keep) {
    this.keep = keep;
    this.page = 0;
    this.render();
  }

  // Sort by `key`, ascending first and reversed on a second click, or in `direction`.
  sortBy(key, direction = null) {
    const same = this.sort.key === key;
    this.sort = { key, direction: direction ?? (same ? -this.sort.direction : 1) };
    for (const th of this.table.tHead.rows[0].cells) {
      const sorted = th.dataset.key === key;
      th.setAttribute(
        "aria-sort",
        sorted ? (this.sort.direction > 0 ? "ascending" : "descending") : "none",
      );
    }
    this.render();
  }

  visible() {
    const rows = this.rows.filter(this.keep);
    const column = this.columns.find((c) => c.key === this.sort.key);
    if (!column) return rows;
    const { direction } = this.sort;
    // Missing figures go last whichever way the column is sorted.
    return rows.sort((a, b) => {
      const [x, y] = [column.value(a), column.value(b)];
      return x == null || y == null ? compare(x, y) : direction * compare(x, y);
    });
  }

  render() {
    const rows = this.visible();
    const pages = Math.max(1, Math.ceil(rows.length / this.pageSize));
    this.page = Math.min(this.page, pages - 1);
    const start = this.page * this.pageSize;
    const shown = rows.slice(start, start + this.pageSize);
    this.table.tBodies[0].replaceChildren(...shown.map((row) => this.renderRow(row)));
    this.renderPager(rows.length, pages);
    this.onRender();
  }

  renderRow(row) {
    // data-key and data-label: a phone shows each row as a card, its cells labelled.
    const cells = this.columns.map((c) =>
      el(
        "td",
        { className: c.className || "", dataset: { key: c.key, label: c.label } },
        c.render(row),
      ),
    );
    return el("tr", { dataset: { id: row.id } }, cells);
  }

  goTo(page) {
    this.page = page;
    this.render();
  }

  renderPager(total, pages) {
    if (total <= this.pageSize) {
      this.pager.replaceChildren(el("span", { className: "count" }, `${total} shown`));
      return;
    }
    const button = (label, page, disabled) =>
      el(
        "button",
        { type: "button", disabled, onclick: () => this.goTo(page), dataset: { page } },
        label,
      );
    const numbers = Array.from({ length: pages }, (_, page) =>
      page === this.page
        ? el("strong", { className: "current" }, String(page + 1))
        : button(String(page + 1), page, false),
    );
    this.pager.replaceChildren(
      el(
        "nav",
        { className: "pages", ariaLabel: "pages" },
        button("‹ Previous", this.page - 1, this.page === 0),
        ...numbers,
        button("Next ›", this.page + 1, this.page === pages - 1),
        el("span", { className: "count" }, `page ${this.page + 1} of ${pages}, ${total} in all`),
      ),
    );
  }
}
