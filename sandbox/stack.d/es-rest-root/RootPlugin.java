package auditor.stack.restroot;

import java.util.Collection;
import java.util.List;
import java.util.function.Predicate;
import java.util.function.Supplier;

import org.elasticsearch.Build;
import org.elasticsearch.client.internal.node.NodeClient;
import org.elasticsearch.cluster.ClusterState;
import org.elasticsearch.cluster.metadata.IndexNameExpressionResolver;
import org.elasticsearch.cluster.node.DiscoveryNodes;
import org.elasticsearch.cluster.service.ClusterService;
import org.elasticsearch.common.bytes.BytesArray;
import org.elasticsearch.common.io.stream.NamedWriteableRegistry;
import org.elasticsearch.common.settings.ClusterSettings;
import org.elasticsearch.common.settings.IndexScopedSettings;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.common.settings.SettingsFilter;
import org.elasticsearch.features.NodeFeature;
import org.elasticsearch.plugins.ActionPlugin;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.rest.BaseRestHandler;
import org.elasticsearch.rest.RestController;
import org.elasticsearch.rest.RestHandler;
import org.elasticsearch.rest.RestRequest;
import org.elasticsearch.rest.RestResponse;
import org.elasticsearch.rest.RestStatus;
import org.elasticsearch.xcontent.XContentBuilder;

/**
 * The Elasticsearch integ-test zip ships without modules/rest-root, so `GET /` answers 405.
 * sandbox/stack compiles this tiny module into the cached distribution: it serves `GET /` and
 * `HEAD /` with the same JSON shape as Elasticsearch's own RestMainAction.
 */
public class RootPlugin extends Plugin implements ActionPlugin {
    private volatile ClusterService clusterService;

    @Override
    public Collection<?> createComponents(PluginServices services) {
        this.clusterService = services.clusterService();
        return List.of();
    }

    @Override
    public Collection<RestHandler> getRestHandlers(Settings settings, NamedWriteableRegistry namedWriteableRegistry,
            RestController restController, ClusterSettings clusterSettings, IndexScopedSettings indexScopedSettings,
            SettingsFilter settingsFilter, IndexNameExpressionResolver indexNameExpressionResolver,
            Supplier<DiscoveryNodes> nodesInCluster, Predicate<NodeFeature> clusterSupportsFeature) {
        return List.of(new RootHandler());
    }

    private final class RootHandler extends BaseRestHandler {
        @Override
        public String getName() {
            return "auditor_stack_main_action";
        }

        @Override
        public List<Route> routes() {
            return List.of(new Route(RestRequest.Method.GET, "/"), new Route(RestRequest.Method.HEAD, "/"));
        }

        @Override
        protected RestChannelConsumer prepareRequest(RestRequest request, NodeClient client) {
            return channel -> {
                if (request.method() == RestRequest.Method.HEAD) {
                    channel.sendResponse(new RestResponse(RestStatus.OK, RestResponse.TEXT_CONTENT_TYPE, BytesArray.EMPTY));
                    return;
                }
                ClusterService cs = clusterService;
                ClusterState state = cs.state();
                Build build = Build.current();
                XContentBuilder b = channel.newBuilder();
                b.startObject();
                b.field("name", cs.getNodeName());
                b.field("cluster_name", cs.getClusterName().value());
                b.field("cluster_uuid", state.metadata().clusterUUID());
                b.startObject("version");
                b.field("number", build.qualifiedVersion());
                b.field("build_flavor", build.flavor());
                b.field("build_type", build.type().displayName());
                b.field("build_hash", build.hash());
                b.field("build_date", build.date());
                b.field("build_snapshot", build.isSnapshot());
                b.field("lucene_version", org.apache.lucene.util.Version.LATEST.toString());
                b.field("minimum_wire_compatibility_version", build.minWireCompatVersion());
                b.field("minimum_index_compatibility_version", build.minIndexCompatVersion());
                b.endObject();
                b.field("tagline", "You Know, for Search");
                b.endObject();
                channel.sendResponse(new RestResponse(RestStatus.OK, b));
            };
        }
    }
}
