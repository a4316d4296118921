// The jianmu viewer's drawing of the tree: Graphviz's SVG (from our DOT) when the server sent
// one, else a tidy top-down layout computed here; subtrees hidden under collapsed nodes.
// `window.JianmuDraw(view)` returns the drawing functions bound to the page's `view` (viewer.js),
// which supplies `onSelect(index)`, `onToggle(index)` and `onDrawn()`.
"use strict";

window.JianmuDraw = function (view) {
  const SVG_NS = "http://www.w3.org/2000/svg";
  const $ = (id) => document.getElementById(id);

  function draw() {
    const canvas = $("canvas");
    canvas.textContent = "";
    view.elements = [];
    view.edges = [];
    if (!view.tree.nodes.length) return;
    if (view.tree.svg) drawGraphviz(canvas); else drawComputed(canvas);
    applyCollapse();
    for (let i = 0; i < view.tree.nodes.length; i++) view.dirty.add(i);
    view.onDrawn();
  }

  function drawGraphviz(canvas) {
    canvas.innerHTML = view.tree.svg;
    for (const g of canvas.querySelectorAll("g.node")) {
      const title = g.querySelector("title");
      const match = title && /^n(\d+)$/.exec(title.textContent.trim());
      if (!match) continue;
      bindNode(g, Number(match[1]));
    }
    for (const g of canvas.querySelectorAll("g.edge")) {
      const title = g.querySelector("title");
      const match = title && /^n(\d+)->n(\d+)$/.exec(title.textContent.trim());
      if (match) view.edges.push([Number(match[1]), Number(match[2]), g]);
    }
  }

  // Without Graphviz: a tidy top-down layout (leaves left to right, parents over their children).
  function drawComputed(canvas) {
    const nodes = view.tree.nodes;
    const children = nodes.map(() => []);
    const roots = [];
    for (const node of nodes) {
      if (node.parent === null || node.parent === undefined) roots.push(node.index);
      else children[node.parent].push(node.index);
    }
    const W = 150, H = 44, GAP_X = 14, GAP_Y = 36;
    const x = new Array(nodes.length).fill(0), depth = new Array(nodes.length).fill(0);
    let next = 0, maxDepth = 0;
    const visible = (i) => !hiddenByCollapse(i);
    const place = (root) => {  // iterative post-order, so deep trees do not overflow the stack
      const stack = [[root, 0, false]];
      while (stack.length) {
        const [i, d, done] = stack.pop();
        depth[i] = d; maxDepth = Math.max(maxDepth, d);
        const kids = view.collapsed.has(i) ? [] : children[i].filter(visible);
        if (!done && kids.length) {
          stack.push([i, d, true]);
          for (let k = kids.length - 1; k >= 0; k--) stack.push([kids[k], d + 1, false]);
        } else if (kids.length) {
          x[i] = (x[kids[0]] + x[kids[kids.length - 1]]) / 2;
        } else {
          x[i] = next; next += W + GAP_X;
        }
      }
    };
    roots.forEach(place);
    const svg = document.createElementNS(SVG_NS, "svg");
    svg.setAttribute("width", Math.max(next, W) + 20);
    svg.setAttribute("height", (maxDepth + 1) * (H + GAP_Y) + 20);
    const edgeLayer = document.createElementNS(SVG_NS, "g");
    svg.appendChild(edgeLayer);
    for (const node of nodes) {
      const i = node.index;
      if (!visible(i)) continue;
      const cx = x[i] + 10 + W / 2, top = depth[i] * (H + GAP_Y) + 10;
      if (node.parent !== null && node.parent !== undefined && visible(node.parent)) {
        const px = x[node.parent] + 10 + W / 2, ptop = depth[node.parent] * (H + GAP_Y) + 10 + H;
        const line = document.createElementNS(SVG_NS, "path");
        line.setAttribute("d", `M${px},${ptop} L${cx},${top}`);
        line.setAttribute("stroke", "#888");
        line.setAttribute("fill", "none");
        const g = document.createElementNS(SVG_NS, "g");
        g.setAttribute("class", "edge");
        g.appendChild(line);
        edgeLayer.appendChild(g);
        view.edges.push([node.parent, i, g]);
      }
      const g = document.createElementNS(SVG_NS, "g");
      g.setAttribute("class", "node");
      const shape = document.createElementNS(SVG_NS, node.shape === "ellipse" ? "ellipse" : "rect");
      if (node.shape === "ellipse") {
        shape.setAttribute("cx", cx); shape.setAttribute("cy", top + H / 2);
        shape.setAttribute("rx", W / 2); shape.setAttribute("ry", H / 2);
      } else {
        shape.setAttribute("x", x[i] + 10); shape.setAttribute("y", top);
        shape.setAttribute("width", W); shape.setAttribute("height", H);
        shape.setAttribute("rx", node.shape === "diamond" ? 18 : 3);
      }
      shape.setAttribute("stroke", "#333");
      g.appendChild(shape);
      for (const [text, dy, size] of [[node.name, 17, 11], [node.kind + (node.detail ? ": " + node.detail : ""), 33, 9]]) {
        const label = document.createElementNS(SVG_NS, "text");
        label.setAttribute("x", cx); label.setAttribute("y", top + dy);
        label.setAttribute("text-anchor", "middle"); label.setAttribute("font-size", size);
        label.textContent = text.length > 26 ? text.slice(0, 25) + "\u2026" : text;
        g.appendChild(label);
      }
      svg.appendChild(g);
      bindNode(g, i);
    }
    canvas.appendChild(svg);
  }

  function bindNode(g, index) {
    const node = view.tree.nodes[index];
    if (!node) return;
    view.elements[index] = g;
    g.dataset.index = index;
    g.dataset.name = node.name;
    g.addEventListener("click", () => view.onSelect(index));
    g.addEventListener("dblclick", (event) => { event.preventDefault(); view.onToggle(index); });
  }

  function shapesOf(g) {
    // Graphviz draws a node as polygons/ellipses/paths, inside an <a> when it has a tooltip (a
    // component has extra small rectangles after its outline): the first one is the outline and
    // carries the status colour.
    const shape = g.querySelector("polygon, ellipse, path, rect");
    return shape ? [shape] : [];
  }

  // ------------------------------------------------------------------------ collapse / expand
  function hiddenByCollapse(index) {
    let parent = view.tree.nodes[index].parent;
    while (parent !== null && parent !== undefined) {
      if (view.collapsed.has(parent)) return true;
      parent = view.tree.nodes[parent].parent;
    }
    return false;
  }

  function applyCollapse() {
    const hidden = view.tree.nodes.map((node) => hiddenByCollapse(node.index));
    view.elements.forEach((g, i) => {
      if (!g) return;
      g.classList.toggle("hidden-node", hidden[i]);
      g.classList.toggle("collapsed", view.collapsed.has(i));
    });
    for (const [, child, g] of view.edges) g.classList.toggle("hidden-node", hidden[child]);
  }

  return { draw, applyCollapse, shapesOf };
};
