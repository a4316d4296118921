"""Pass inputs to a YAML tree and read its final state; inputs are checked against the schema.

The tree here is YAML text (load_tree takes a path or the text itself). Its `price` field is
marked `input: true`, so a run without it is refused before the first tick, and a value of the
wrong type is refused with the field's name.

Run: python examples/inputs_and_state.py
"""

from jianmu_bt.loader import TreeInputError, load_tree
from jianmu_bt.runtime import StateValidationError

TREE = """
version: 1
name: pricing
state:
  price: {type: number, input: true, description: Net price}
  quantity: {type: integer, default: 1}
  vat_rate: {type: number, default: 0.2}
  total: {type: string}
  label: {type: string}
tools: [calculator]
root:
  sequence:
    name: Price
    children:
      - condition: {name: PriceIsPositive, check: "price > 0"}
      - tool:
          name: Total
          tool: calculator
          arguments: {expression: "{price} * {quantity} * (1 + {vat_rate})"}
          output: total
      - set: {name: Label, values: {label: "{quantity} x {price} + VAT = {total}"}}
"""


def main() -> None:
    with load_tree(TREE) as tree:
        try:
            tree.run()
        except TreeInputError as exc:
            print(f"refused: {exc}")
        try:
            tree.run({"price": "twelve"})
        except StateValidationError as exc:
            print(f"refused: {exc}")

    with load_tree(TREE) as tree:
        result = tree.run({"price": 12.5, "quantity": 4}, timeout=30)
        print(f"status: {result.status.value}")
        print(f"total: {result.state['total']}")
        print(f"label: {result.state['label']}")
        print(f"state keys: {sorted(tree.state.get())}")


if __name__ == "__main__":
    main()
