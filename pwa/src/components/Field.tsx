import type { ComponentChildren } from "preact";

/** A labelled control: the label text above its input or select (`field` on the phone, `filter` on the dashboard). */
export function Field({
  label,
  children,
  class: cls = "field",
}: {
  label: ComponentChildren;
  children: ComponentChildren;
  class?: string;
}) {
  return (
    // biome-ignore lint/a11y/noLabelWithoutControl: the control is `children`, inside the label.
    <label class={cls}>
      <span>{label}</span>
      {children}
    </label>
  );
}
