/** A small element builder: the panel and the log tab build plain DOM, no React. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: { [key: string]: string } = {},
  text = ''
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    node.setAttribute(k, v);
  }
  if (text) {
    node.textContent = text;
  }
  return node;
}

/** Sets a node's text only when it differs, so that an unchanged row is left alone. */
export function setText(node: HTMLElement, text: string): void {
  if (node.textContent !== text) {
    node.textContent = text;
  }
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/** An SVG element: the job page's timeline and charts are plain SVG, no charting library. */
export function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: { [key: string]: string | number } = {},
  text = ''
): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) {
    node.setAttribute(k, String(v));
  }
  if (text) {
    node.textContent = text;
  }
  return node;
}
