package auditor.tests.securityanalysis;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import org.apache.lucene.analysis.CharArraySet;
import org.apache.lucene.analysis.TokenFilter;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.Tokenizer;
import org.apache.lucene.analysis.email.UAX29URLEmailTokenizer;
import org.apache.lucene.analysis.pattern.PatternCaptureGroupTokenFilter;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.apache.lucene.analysis.tokenattributes.PositionIncrementAttribute;
import org.elasticsearch.index.analysis.TokenFilterFactory;
import org.elasticsearch.index.analysis.TokenizerFactory;
import org.elasticsearch.indices.analysis.AnalysisModule.AnalysisProvider;
import org.elasticsearch.plugins.AnalysisPlugin;
import org.elasticsearch.plugins.Plugin;

/**
 * The three analysis components of the analysis-common module that Elasticsearch's security
 * index (`.security-7`: users, roles, API keys) names in its `email` analyzer, for the stack's
 * integ-test distribution, which lacks that module: the `uax_url_email` tokenizer and the
 * `pattern_capture` and `unique` token filters, with the same settings and defaults as
 * analysis-common's. tests/scenarios/secure_elasticsearch.py compiles it into a copy of the
 * distribution; without it `POST /_security/api_key` fails ("Unknown filter type [pattern_capture]").
 */
public class SecurityAnalysisPlugin extends Plugin implements AnalysisPlugin {

    @Override
    public Map<String, AnalysisProvider<TokenizerFactory>> getTokenizers() {
        return Map.of("uax_url_email", (indexSettings, environment, name, settings) -> {
            int maxTokenLength = settings.getAsInt("max_token_length", 255);
            return TokenizerFactory.newFactory(name, () -> {
                UAX29URLEmailTokenizer tokenizer = new UAX29URLEmailTokenizer();
                tokenizer.setMaxTokenLength(maxTokenLength);
                return tokenizer;
            });
        });
    }

    @Override
    public Map<String, AnalysisProvider<TokenFilterFactory>> getTokenFilters() {
        AnalysisProvider<TokenFilterFactory> patternCapture = (indexSettings, environment, name, settings) -> {
            List<String> regexes = settings.getAsList("patterns");
            if (regexes.isEmpty()) {
                throw new IllegalArgumentException("required setting 'patterns' is missing for token filter [" + name + "]");
            }
            Pattern[] patterns = regexes.stream().map(Pattern::compile).toArray(Pattern[]::new);
            boolean preserveOriginal = settings.getAsBoolean("preserve_original", true);
            return factory(name, input -> new PatternCaptureGroupTokenFilter(input, preserveOriginal, patterns));
        };
        AnalysisProvider<TokenFilterFactory> unique = (indexSettings, environment, name, settings) -> {
            boolean onlyOnSamePosition = settings.getAsBoolean("only_on_same_position", false);
            return factory(name, input -> new UniqueTokenFilter(input, onlyOnSamePosition));
        };
        // pattern_capture means nothing without its patterns: only as configured in an index's settings
        return Map.of("pattern_capture", AnalysisPlugin.requiresAnalysisSettings(patternCapture), "unique", unique);
    }

    private static TokenFilterFactory factory(String name, java.util.function.UnaryOperator<TokenStream> make) {
        return new TokenFilterFactory() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public TokenStream create(TokenStream tokenStream) {
                return make.apply(tokenStream);
            }
        };
    }

    /** analysis-common's UniqueTokenFilter: drops a token seen before (at the same position only, if asked). */
    static final class UniqueTokenFilter extends TokenFilter {
        private final CharTermAttribute termAttribute = addAttribute(CharTermAttribute.class);
        private final PositionIncrementAttribute positionIncrement = addAttribute(PositionIncrementAttribute.class);
        private final CharArraySet previous = new CharArraySet(8, false);
        private final boolean onlyOnSamePosition;

        UniqueTokenFilter(TokenStream input, boolean onlyOnSamePosition) {
            super(input);
            this.onlyOnSamePosition = onlyOnSamePosition;
        }

        @Override
        public boolean incrementToken() throws IOException {
            while (input.incrementToken()) {
                char[] term = termAttribute.buffer();
                int length = termAttribute.length();
                boolean duplicate;
                if (onlyOnSamePosition) {
                    int increment = positionIncrement.getPositionIncrement();
                    if (increment > 0) {
                        previous.clear();
                    }
                    duplicate = increment == 0 && previous.contains(term, 0, length);
                } else {
                    duplicate = previous.contains(term, 0, length);
                }
                char[] saved = new char[length];
                System.arraycopy(term, 0, saved, 0, length);
                previous.add(saved);
                if (!duplicate) {
                    return true;
                }
            }
            return false;
        }

        @Override
        public void reset() throws IOException {
            super.reset();
            previous.clear();
        }
    }
}
