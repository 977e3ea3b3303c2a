import { agentPromptOf } from "../../../sdk/src/permission-prompt";
import { Section } from "./DeliveryStory";
import { SafeText } from "./SafeText";

/**
 * The adapter's own words for the prompt (`_meta.permission{title, description}` on the request,
 * read by sdk/src/permission-prompt.ts), under a heading that says whose words they are: nothing
 * checked them, and they never replace the card's own title or the tool call it shows.
 */
export function AgentPrompt({ meta }: { meta: unknown }) {
  const prompt = agentPromptOf(meta);
  if (!prompt) return null;
  return (
    <Section title="The agent asks (its words, unverified)">
      {prompt.title && (
        <p>
          <strong>
            <SafeText text={prompt.title} testId="agent-prompt-title" />
          </strong>
        </p>
      )}
      {prompt.description && <SafeText text={prompt.description} block testId="agent-prompt-description" />}
    </Section>
  );
}
