// The API's docs page (/docs): Swagger UI from the bundled files, on this server's OpenAPI schema.
window.addEventListener("DOMContentLoaded", function () {
  "use strict";
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    persistAuthorization: false,
  });
});
